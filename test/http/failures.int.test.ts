import { afterAll, beforeAll, expect, test } from 'bun:test'
import pino from 'pino'
import { createTokenVerifier } from '../../src/auth/token-verifier.ts'
import { openPostgres } from '../../src/database/database.ts'
import { TEST_SECRET, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// A port nothing listens on: the database is down for this whole file.
const unreachable = openPostgres({
  keys: TEST_KEYS,
  url: 'postgres://postgres@127.0.0.1:1/none',
  poolSize: 1,
  statementTimeoutMs: 1000,
})
let token: string
beforeAll(async () => {
  token = await testApp({ db: unreachable.db, keyring: unreachable.keyring }).tokenFor('alice')
})
afterAll(() => unreachable.close())

function appWith(verifyToken = createTokenVerifier({ secret: TEST_SECRET }), logged: unknown[] = []) {
  const logger = pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line)) })
  return testApp({ db: unreachable.db, keyring: unreachable.keyring, verifyToken, logger }).app
}
const call = (app: ReturnType<typeof appWith>, init: RequestInit, path = '/plants') =>
  app.handle(new Request(`http://localhost${path}`, init))

test('while the database is unreachable, creating and listing answer 503 with Retry-After', async () => {
  const app = appWith()
  const headers = { ...tokenHeader(token), 'content-type': 'application/json' }
  for (const init of [{ method: 'POST', headers, body: '{"id": 1, "name": "x"}' }, { headers }]) {
    const response = await call(app, init)
    expect(response.status).toBe(503)
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await response.json()).toEqual({ error: 503, message: expect.stringContaining('database') })
  }
})

test('an unexpected error is 500 naming the request id, logged with it, and leaks no internals', async () => {
  const logged: unknown[] = []
  const failingVerifier = async () => {
    throw new Error('secret internals at /srv/app/db.ts: select * from keys')
  }
  const app = appWith(failingVerifier, logged)
  const response = await call(app, {
    headers: { ...tokenHeader(token), 'x-request-id': 'req-500' },
  })
  expect(response.status).toBe(500)
  const body = (await response.json()) as { error: number; message: string }
  expect(body.error).toBe(500)
  expect(body.message).toContain('req-500')
  expect(body.message).not.toMatch(/secret|select|\/srv|at /)
  expect(logged).toEqual([expect.objectContaining({ requestId: 'req-500', msg: 'unexpected error' })])
})
