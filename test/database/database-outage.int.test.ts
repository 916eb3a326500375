import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { type RunningServer, serve } from '../../src/start/serve.ts'
import { type TestApp, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { startTcpProxy } from '../support/tcp-proxy.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// A guard against hanging forever, far above the server's own deadline; not a speed check.
const HANG_GUARD_MS = 20_000
const REQUEST_TIMEOUT_MS = 4000

let database: TestDatabase
let proxy: ReturnType<typeof startTcpProxy>
let handle: DatabaseHandle
let server: RunningServer
let base: string
let started: TestApp

beforeAll(async () => {
  database = await createTestDatabase('outage')
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  const target = new URL(database.url)
  proxy = startTcpProxy({ hostname: target.hostname, port: Number(target.port || 5432) })
  const viaProxy = new URL(database.url)
  viaProxy.port = String(proxy.port)
  handle = openPostgres({ keys: TEST_KEYS, url: viaProxy.toString(), poolSize: 4, statementTimeoutMs: 5000 })
  started = testApp({ db: handle.db, keyring: handle.keyring })
  server = serve(started.app, { hostname: '127.0.0.1', port: 0, requestTimeoutMs: REQUEST_TIMEOUT_MS })
  base = `http://127.0.0.1:${server.port}`
})

afterAll(async () => {
  await server.stop()
  await handle.close()
  proxy.stop()
  await database.drop()
})

const bearer = async (subject: string) => tokenHeader(await started.tokenFor(subject, 600)).authorization
const get = (path: string, authorization = '') =>
  fetch(`${base}${path}`, { headers: { authorization }, signal: AbortSignal.timeout(HANG_GUARD_MS) })
const post = (id: number, authorization: string) =>
  fetch(`${base}/plants`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ id, name: `plant ${id}` }),
    signal: AbortSignal.timeout(HANG_GUARD_MS),
  })

async function expectUnavailable(response: Response) {
  expect(response.status).toBe(503)
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
  const body = (await response.json()) as { error: number; message: string }
  expect(body.error).toBe(503)
  expect(body.message.length).toBeGreaterThan(0)
}

async function eventually(check: () => Promise<boolean>) {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await check()) return
    await Bun.sleep(100)
  }
  throw new Error('the condition never held')
}

describe.each(['reset', 'silent'] as const)('when the database connection is cut (%s)', (how) => {
  test('then /health stays 200, /ready and the API answer 503 with Retry-After, and all recover without a restart', async () => {
    const caller = await bearer(`olga-${how}`)
    expect((await post(1, caller)).status).toBe(200)

    proxy.cut(how)

    expect((await get('/health')).status).toBe(200)
    await expectUnavailable(await get('/ready'))
    await expectUnavailable(await get('/plants', caller))
    await expectUnavailable(await post(2, caller))
    const metrics = await (await get('/metrics')).text()
    expect(metrics).toContain('plant_store_database_up 0')

    proxy.restore()

    await eventually(async () => (await get('/ready')).status === 200)
    await eventually(async () => (await post(2, caller)).status === 200)
    const listed = await get('/plants', caller)
    expect(listed.status).toBe(200)
    expect(await listed.json()).toEqual([{ name: 'plant 1' }, { name: 'plant 2' }])
  })
})
