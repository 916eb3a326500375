import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { hostileRequest, tamperToken } from '../support/hostile-requests.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { rawExchange } from '../support/raw-http.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

const REQUESTS = 300
const REQUEST_BOUND_MS = 15_000

let service: Service
let server: ServerProcess
let token: string
beforeAll(async () => {
  service = await startService({ label: 'hostile', env: { DATABASE_POOL_SIZE: '4' } })
  server = service.server
  token = await service.tokenFor('eve', 600)
}, 30_000)
afterAll(async () => {
  await server?.stop('SIGTERM')
  await service?.stop()
})

const exchange = (bytes: Uint8Array | string) => rawExchange(server.url, bytes, { waitMs: 10_000 })

test(`${REQUESTS} hostile requests over real sockets never get a 5xx, and the process stays up`, async () => {
  // given a running server and a sample of generated hostile requests
  const samples = fc.sample(hostileRequest({ valid: [token], tamper: tamperToken }), {
    numRuns: REQUESTS,
    seed: 6,
  })
  const statuses: number[] = []
  // when they are sent over HTTP, ten at a time
  for (let start = 0; start < samples.length; start += 10) {
    const batch = samples.slice(start, start + 10).map(async ({ method, path, headers, body }) => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers,
        body: body as BodyInit | undefined,
        signal: AbortSignal.timeout(REQUEST_BOUND_MS),
      })
      await response.arrayBuffer()
      statuses.push(response.status)
    })
    await Promise.all(batch)
  }
  // then none is a server error
  expect(statuses).toHaveLength(REQUESTS)
  expect(statuses.filter((status) => status >= 500)).toEqual([])
  // and the process still serves
  expect(server.process.exitCode).toBeNull()
  expect((await fetch(`${server.url}/health`)).status).toBe(200)
}, 60_000)

test('malformed HTTP on a raw socket gets a 4xx, a 505 or a closed connection, never another 5xx', async () => {
  // given bytes no HTTP client would send
  const garbage = [
    'GARBAGE\r\n\r\n',
    'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
    'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    'POST /plants HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n',
    `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(200_000)}\r\n\r\n`,
    `GET /${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    'GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \u0000\u0001\r\n\r\n',
    crypto.getRandomValues(new Uint8Array(4096)),
  ]
  for (const bytes of garbage) {
    // when each is written to the socket
    const answer = await exchange(bytes)
    // then the server answers with a client error, or the HTTP layer's 505 for bytes whose first
    // line does not read as HTTP/1.x (random bytes get it about half the time), or closes the
    // connection; saying nothing and keeping it open (a hang) fails
    const { status } = answer
    const refused = (status >= 400 && status < 500) || status === 505
    const hungUp = answer.text === '' && answer.closed
    expect({ bytes: String(bytes).slice(0, 60), answered: refused || hungUp }).toEqual({
      bytes: String(bytes).slice(0, 60),
      answered: true,
    })
  }
  expect(server.process.exitCode).toBeNull()
  expect((await fetch(`${server.url}/health`)).status).toBe(200)
}, 30_000)

// A known limit (docs/api.md, Known limit: huge headers): Bun refuses headers over --max-http-header-size before
// the app runs, with its own bare 431, not the Error body. Pinned so a change is noticed.
test("request headers over 128 KiB get the runtime's bare 431, before the app", async () => {
  const answer = await exchange(`GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(200_000)}\r\n\r\n`)
  expect(answer.status).toBe(431)
  expect(answer.headers.get('content-type')).not.toBe('application/json')
  expect((await fetch(`${server.url}/health`)).status).toBe(200)
})

test('an unknown HTTP version is refused by the HTTP layer as 505, the one 5xx RFC 9110 prescribes', async () => {
  expect((await exchange('GET /plants HTTP/9.9\r\nHost: x\r\n\r\n')).status).toBe(505)
  expect((await fetch(`${server.url}/health`)).status).toBe(200)
})

test('a 100 KB bearer token is a 401 with the Error body from the real server, not a 5xx or a hang', async () => {
  // given a token-shaped credential of 100 KB
  const huge = `${'a'.repeat(50_000)}.${'b'.repeat(50_000)}.c`
  // when it is sent
  const response = await fetch(`${server.url}/plants`, {
    headers: tokenHeader(huge),
    signal: AbortSignal.timeout(REQUEST_BOUND_MS),
  })
  // then the app refuses it like any other bad token (the server admits headers up to 128 KiB)
  expect(response.status).toBe(401)
  expect(await response.json()).toMatchObject({ error: 401 })
  expect(response.headers.get('www-authenticate')).toContain('invalid_token')
  expect((await fetch(`${server.url}/health`)).status).toBe(200)
}, 30_000)
