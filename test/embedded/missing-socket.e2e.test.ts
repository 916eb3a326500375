import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Socket, UnixSocketListener } from 'bun'
import postgres from 'postgres'
import { socketUrl } from '../../src/database/postgres-client.ts'
import { postPlant, tokenHeader } from '../support/plant-client.ts'
import { POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { type Service, startService } from '../support/service.ts'

// A database reached through its Unix socket: once the server is gone its socket file is gone too,
// and a connection fails with ENOENT rather than ECONNREFUSED. That is the database unreachable
// like any other way: 503 with Retry-After, never 500.
const CALLS = 6

type Link = { upstream?: Socket<Link>; pending: Uint8Array[] }

// The shared PostgreSQL's socket, as this test's own: a Unix socket forwarding to its TCP port, so
// that the test can take it away without touching the server.
function unixSocketTo(path: string, target: URL): UnixSocketListener<Link> {
  return Bun.listen<Link>({
    unix: path,
    socket: {
      open(client) {
        client.data = { pending: [] }
        void Bun.connect<Link>({
          hostname: target.hostname,
          port: Number(target.port || 5432),
          socket: {
            data: (_upstream, chunk) => void client.write(chunk),
            close: () => void client.end(),
            error: () => void client.end(),
          },
        }).then(
          (upstream) => {
            client.data.upstream = upstream
            for (const chunk of client.data.pending.splice(0)) upstream.write(chunk)
          },
          () => void client.end(),
        )
      },
      data(client, chunk) {
        if (client.data.upstream) client.data.upstream.write(chunk)
        else client.data.pending.push(new Uint8Array(chunk))
      },
      close: (client) => void client.data.upstream?.end(),
    },
  })
}

let folder: string
let listener: UnixSocketListener<Link> | undefined
let service: Service
let token: string
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'plant-store-socket-'))
  listener = unixSocketTo(join(folder, '.s.PGSQL.5432'), new URL(POSTGRES_ADMIN_URL))
  service = await startService({
    label: 'missing-socket',
    databaseUrl: (url) => socketUrl(folder, 'postgres', new URL(url).pathname.slice(1)),
  })
  token = await service.tokenFor('sam')
}, 60_000)
afterAll(async () => {
  listener?.stop(true)
  await service?.stop()
  await rm(folder, { recursive: true, force: true })
})

test('with its socket gone, every GET and POST answers 503 with Retry-After, and the service recovers', async () => {
  // given a service that serves through the socket
  expect((await postPlant(service.url, token, { id: 1, name: 'Fern' })).status).toBe(200)
  // when the socket goes away, and the connections the service held end (the server stopped)
  listener?.stop(true)
  listener = undefined
  await rm(join(folder, '.s.PGSQL.5432'), { force: true })
  const admin = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} })
  const database = new URL(service.databaseUrl ?? '').pathname.slice(1)
  await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${database}`
  await admin.end()
  const answers = []
  for (let call = 0; call < CALLS; call++) {
    const signal = AbortSignal.timeout(20_000)
    const listed = await fetch(`${service.url}/plants`, {
      headers: tokenHeader(token),
      signal,
    })
    const created = await postPlant(service.url, token, { id: 2 + call, name: 'Ivy' }, signal)
    for (const response of [listed, created])
      answers.push({
        status: response.status,
        retryAfter: response.headers.get('retry-after') !== null,
        body: await response.json(),
      })
  }
  // then each is the database's 503, with Retry-After and the Error body
  expect(answers).toEqual(
    Array(CALLS * 2).fill({
      status: 503,
      retryAfter: true,
      body: { error: 503, message: expect.any(String) },
    }),
  )
  // and with the socket back, the service answers again without a restart, having lost nothing
  listener = unixSocketTo(join(folder, '.s.PGSQL.5432'), new URL(POSTGRES_ADMIN_URL))
  let status = 0
  for (let tries = 0; tries < 50 && status !== 200; tries++) {
    const response = await fetch(`${service.url}/plants`, { headers: tokenHeader(token) })
    status = response.status
    if (status === 200) expect(await response.json()).toEqual([{ name: 'Fern' }])
    else await Bun.sleep(200)
  }
  expect(status).toBe(200)
}, 60_000)
