// A minimal reproduction, kept as the record (docs/api.md, the 413; docs/operating.md, Deno): Deno's
// HTTP/1.1 server reads a request body that the handler never read to its end after the response,
// with no bound, and Deno.serve has no way to close that one connection.
//
//   node_modules/deno/deno run --allow-net test/bench/deno-unread-body.repro.ts [MiB]
//
// A bare Deno.serve answers every request 413 at once, without touching its body. A client on a raw
// socket declares a body of `MiB` (200 by default), reads the answer, then goes on sending the body
// as fast as the server takes it. It prints how long the answer took, how much of the body the
// server took after answering, and whether the server closed the connection before the end: on
// Deno 2.9 it takes all of it, and the connection stays open until the body has come.
// What of Deno this uses, typed here: the project's type check knows Bun's globals, not Deno's.
type DenoSocket = {
  write: (bytes: Uint8Array) => Promise<number>
  read: (into: Uint8Array) => Promise<number | null>
  close: () => void
}
type DenoApi = {
  args: string[]
  version: { deno: string }
  serve: (
    options: { hostname: string; port: number; onListen: () => void },
    handler: () => Response,
  ) => { addr: { port: number }; shutdown: () => Promise<void> }
  connect: (options: { hostname: string; port: number }) => Promise<DenoSocket>
}
const Deno = (globalThis as unknown as { Deno: DenoApi }).Deno

const mib = Number(Deno.args[0] ?? '200')
const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, () => {
  return new Response('{"error":413}', { status: 413, headers: { connection: 'close' } })
})
const { port } = server.addr
const socket = await Deno.connect({ hostname: '127.0.0.1', port })
const started = performance.now()
await socket.write(
  new TextEncoder().encode(
    `POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${mib * 1024 * 1024}\r\n\r\n`,
  ),
)
const answer = new Uint8Array(1024)
const read = await socket.read(answer)
const answeredMs = performance.now() - started
const status = new TextDecoder().decode(answer.subarray(0, read ?? 0)).split('\r\n')[0]
const chunk = new Uint8Array(1024 * 1024).fill(32)
let sent = 0
let closed = false
try {
  for (let at = 0; at < mib; at++) {
    await socket.write(chunk)
    sent++
  }
} catch {
  closed = true
}
const tookMs = performance.now() - started
console.log(
  JSON.stringify({
    deno: Deno.version.deno,
    answer: status,
    answeredMs: Math.round(answeredMs),
    bodyDeclaredMiB: mib,
    bodyTakenAfterTheAnswerMiB: sent,
    closedBeforeTheEnd: closed,
    tookMs: Math.round(tookMs),
  }),
)
socket.close()
await server.shutdown()

export {}
