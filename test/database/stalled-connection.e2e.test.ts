import { dlopen, FFIType, ptr } from 'bun:ffi'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Socket, TCPSocketListener } from 'bun'
import { POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { runServerToExit } from '../support/server-process.ts'

// Every way a connection can stall ends a start within 30 s, in one line naming DATABASE_URL and
// the cause. Hosts of the test's own on loopback stand in for a host that drops packets and for a
// server that stops answering half-way through the start.
const SECRET = 'stalled-connection-secret-of-32-bytes-x'
const START_BOUND_MS = 30_000

const libc = dlopen('libc.so.6', {
  socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
})

// A port whose accept queue is full and never drained: the kernel drops every new SYN, as a host
// behind a firewall that drops packets does. Node's and Bun's listeners always accept, hence libc.
async function droppingPort(): Promise<{ port: number; close: () => void }> {
  const fd = libc.symbols.socket(2, 1, 0) // AF_INET, SOCK_STREAM
  const address = new Uint8Array(16)
  const view = new DataView(address.buffer)
  view.setUint16(0, 2, true) // sin_family, in the machine's order
  address.set([127, 0, 0, 1], 4)
  if (libc.symbols.bind(fd, ptr(address), 16) !== 0 || libc.symbols.listen(fd, 0) !== 0)
    throw new Error('cannot make a listening socket')
  const length = new Uint32Array([16])
  libc.symbols.getsockname(fd, ptr(address), ptr(length))
  const port = view.getUint16(2, false)
  // Backlog 0 holds one connection that completed its handshake: taken, it leaves no room.
  const filler = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
  return {
    port,
    close: () => {
      filler.end()
      libc.symbols.close(fd)
    },
  }
}

type Link = { upstream?: Socket<Link>; fromClient: number }

// A PostgreSQL that lets the client's first `writes` through, then goes silent: everything after
// is dropped. The start-up message is the first (no SSL is asked on loopback), postgres.js's read
// of the array types the second; the third is the start's first statement.
function silentAfter(writes: number, target: URL): TCPSocketListener<Link> {
  return Bun.listen<Link>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      async open(client) {
        client.data = { fromClient: 0 }
        client.data.upstream = await Bun.connect<Link>({
          hostname: target.hostname,
          port: Number(target.port || 5432),
          socket: { data: (_upstream, chunk) => void client.write(chunk) },
        })
      },
      data(client, chunk) {
        client.data.fromClient++
        if (client.data.fromClient <= writes) client.data.upstream?.write(chunk)
      },
      close: (client) => void client.data.upstream?.end(),
    },
  })
}

let dropping: { port: number; close: () => void }
let silentInStartup: TCPSocketListener<Link>
let silentOnceReady: TCPSocketListener<Link>
beforeAll(async () => {
  dropping = await droppingPort()
  silentInStartup = silentAfter(1, new URL(POSTGRES_ADMIN_URL))
  silentOnceReady = silentAfter(2, new URL(POSTGRES_ADMIN_URL))
})
afterAll(() => {
  dropping?.close()
  silentInStartup?.stop(true)
  silentOnceReady?.stop(true)
})

const withPort = (port: number) =>
  Object.assign(new URL(POSTGRES_ADMIN_URL), { port: String(port) }).toString()

const cases = [
  { name: 'a host that drops packets', url: () => withPort(dropping.port), cause: /no answer within \d+ s/ },
  {
    name: 'a server that goes silent while the connection starts',
    url: () => withPort(silentInStartup.port),
    cause: /no answer within \d+ s/,
  },
  {
    name: "a server that goes silent at the start's first statement",
    url: () => withPort(silentOnceReady.port),
    cause: /no answer within \d+ s/,
  },
]

test.each(cases)(
  'a start against $name stops within 30 s with one line naming DATABASE_URL and the cause',
  async ({ url, cause }) => {
    // given a DATABASE_URL whose connection stalls
    const startedAt = performance.now()
    // when the server starts
    const { stderr, exitCode } = await runServerToExit({ DATABASE_URL: url(), AUTH_JWT_SECRET: SECRET })
    // then it exits non-zero within 30 s, with one line naming the variable and the cause
    expect(exitCode).not.toBe(0)
    expect(performance.now() - startedAt).toBeLessThan(START_BOUND_MS)
    const lines = stderr.trimEnd().split('\n')
    expect(lines).toEqual([expect.any(String)])
    expect(lines[0]).toContain('DATABASE_URL')
    expect(lines[0]).toMatch(cause)
    expect(stderr).not.toMatch(/\bat\s|node_modules|\.ts:\d|\.js:\d/)
  },
  START_BOUND_MS + 15_000,
)
