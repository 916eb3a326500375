import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { tokenHeader } from '../support/plant-client.ts'
import { rawExchange } from '../support/raw-http.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

// The API (docs/api.md): a body that stops arriving is answered 408 (or the connection closed) within 30 s.
const ANSWER_BOUND_MS = 30_000

// A create whose body promises 1000 bytes and stops after 9, or a chunked one that stops after a
// chunk; then the client says nothing more.
const stalledCreates = (token: string) => [
  {
    name: 'Content-Length: 1000 and 9 bytes',
    bytes: `POST /plants HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nX-Request-Id: stalled-length\r\n\r\n{"id": 1,`,
    requestId: 'stalled-length',
  },
  {
    name: 'a chunked body that stops after one chunk',
    bytes: `POST /plants HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Request-Id: stalled-chunked\r\n\r\n9\r\n{"id": 1,\r\n`,
    requestId: 'stalled-chunked',
  },
]

type LogEntry = { requestId?: string; status?: number; msg?: string; level?: number }

async function loggedRequest(server: ServerProcess, requestId: string): Promise<LogEntry | undefined> {
  for (let waited = 0; waited < 5_000; waited += 100) {
    const entries = server.logLines().map((line) => JSON.parse(line) as LogEntry)
    const entry = entries.find((candidate) => candidate.requestId === requestId)
    if (entry) return entry
    await Bun.sleep(100)
  }
  return undefined
}

describe.each([
  ['the default REQUEST_TIMEOUT_MS', {}],
  ['REQUEST_TIMEOUT_MS=3000, shorter than the body limit', { REQUEST_TIMEOUT_MS: '3000' }],
])('with %s', (_name, extraEnv) => {
  let service: Service
  let token: string
  beforeAll(async () => {
    service = await startService({ label: 'edge', env: { LOG_LEVEL: 'info', ...extraEnv } })
    token = await service.tokenFor('s', 600)
  }, 30_000)
  afterAll(async () => {
    await service?.stop()
  })

  test('a body that stops half-way is a 408 with the Error body within 30 s, logged, and stores nothing', async () => {
    const answers = await Promise.all(
      stalledCreates(token).map(async (create) => ({
        create,
        answer: await rawExchange(service.url, create.bytes, { waitMs: ANSWER_BOUND_MS + 5_000 }),
      })),
    )
    for (const { create, answer } of answers) {
      // then the client is told it stopped, not that the service failed, in time
      expect({ name: create.name, status: answer.status }).toEqual({ name: create.name, status: 408 })
      expect(answer.firstByteMs).toBeLessThan(ANSWER_BOUND_MS)
      expect(answer.headers.get('content-type')).toBe('application/json')
      const body = JSON.parse(answer.body) as { error: number; message: string }
      expect(body.error).toBe(408)
      expect(body.message).toMatch(/body stopped arriving/)
      // and the connection is closed with it (RFC 9110 §15.5.9)
      expect(answer.closed).toBe(true)
      expect(answer.elapsedMs).toBeLessThan(ANSWER_BOUND_MS)
      // and the answer is logged like any other 4xx, with its request id (once it has gone out)
      expect(await loggedRequest(service.server, create.requestId)).toMatchObject({
        status: 408,
        msg: 'request',
        level: 30,
      })
    }
    // and nothing was created
    const listed = await fetch(`${service.url}/plants`, { headers: tokenHeader(token) })
    expect(await listed.json()).toEqual([])
  }, 60_000)
})
