import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { issueToken } from '../../src/auth/issue-token.ts'
import { createKeyring } from '../../src/crypto/keyring.ts'
import type { Database, DatabaseHandle } from '../../src/database/database.ts'
import { eraseOwner } from '../../src/erasure/erase-owner.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { createLogger } from '../../src/shared/logger.ts'
import { TEST_SECRET, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { appendAround } from '../support/storage.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

type LogLine = Record<string, unknown>

function appWithLogs(db: Database, level = 'info') {
  const lines: LogLine[] = []
  const logger = createLogger(level, { write: (line) => lines.push(JSON.parse(line) as LogLine) })
  const { app } = testApp({ db, keyring: createKeyring(TEST_KEYS), logger })
  const send = async (path: string, init: RequestInit = {}) => {
    const response = await app.handle(new Request(`http://localhost${path}`, init))
    const text = await response.text()
    await Bun.sleep(5) // the log line and the metrics are written after the response
    return { status: response.status, headers: response.headers, text }
  }
  return { app, lines, send }
}

function sample(metrics: string, name: string): number | undefined {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.slice(name.length + 1))
}

let handle: DatabaseHandle
let token: string
beforeAll(async () => {
  handle = await openStorage({ kind: 'memory' })
  token = await issueToken(TEST_SECRET, { subject: 'dora', ttlSeconds: 600, now: new Date() })
})
afterAll(() => handle.close())

const create = (id: number) => ({
  method: 'POST',
  headers: { ...tokenHeader(token), 'content-type': 'application/json' },
  body: JSON.stringify({ id, name: `plant ${id}` }),
})

describe('GET /metrics', () => {
  test('given requests of several outcomes, then it counts them by method, route and status and times them', async () => {
    const { send } = appWithLogs(handle.db, 'silent')
    await send('/plants', create(1))
    await send('/plants', create(2))
    await send('/plants')
    await send('/nowhere')
    await send('/plants', { method: 'DELETE' })

    const response = await send('/metrics')
    const text = await (await send('/metrics')).text

    expect(response.headers.get('content-type')).toContain('text/plain')
    expect(text).toContain('plant_store_http_requests_total{method="POST",route="/plants",status="200"} 2')
    expect(text).toContain('plant_store_http_requests_total{method="GET",route="/plants",status="401"} 1')
    expect(text).toContain('plant_store_http_requests_total{method="GET",route="unmatched",status="404"} 1')
    expect(text).toContain(
      'plant_store_http_requests_total{method="DELETE",route="unmatched",status="405"} 1',
    )
    expect(text).toContain(
      'plant_store_http_request_duration_seconds_count{method="POST",route="/plants",status="200"} 2',
    )
    expect(text).toContain(
      'plant_store_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/plants",status="200"} 2',
    )
  })

  test('given plants created, then the events appended, the log head and a projection lag of 0 are shown', async () => {
    const { send } = appWithLogs(handle.db, 'silent')
    const before = sample(await (await send('/metrics')).text, 'plant_store_events_head_position') ?? 0
    await send('/plants', create(10))
    await send('/plants', create(11))
    await send('/plants', create(11)) // a safe retry appends nothing

    const text = await (await send('/metrics')).text

    expect(sample(text, 'plant_store_events_head_position')).toBe(before + 2)
    expect(sample(text, 'plant_store_events_appended_total')).toBe(2) // by this app
    expect(sample(text, 'plant_store_projection_lag_events')).toBe(0)
    expect(sample(text, 'plant_store_database_up')).toBe(1)
  })

  test('given an event appended around the projection, then the lag counts it; once its owner is erased, it makes no row and counts no more', async () => {
    const { send } = appWithLogs(handle.db, 'silent')
    await appendAround(handle, 'lagging-lu', { data: { id: '1', name: 'Lagging ivy', tag: null } })
    expect(sample(await (await send('/metrics')).text, 'plant_store_projection_lag_events')).toBe(1)

    await eraseOwner(handle.db, 'lagging-lu')

    const text = await (await send('/metrics')).text
    expect(sample(text, 'plant_store_projection_lag_events')).toBe(0)
    expect(sample(text, 'plant_store_events_head_position')).toBeGreaterThan(
      sample(text, 'plant_store_projection_position') ?? 0,
    )
  })

  test('given two apps, then each has its own registry', async () => {
    const first = appWithLogs(handle.db, 'silent')
    const second = appWithLogs(handle.db, 'silent')
    await first.send('/health')

    const text = await (await second.send('/metrics')).text

    expect(text).not.toContain('route="/health"')
  })
})

describe('request logs', () => {
  test('given an authenticated request, then one JSON line names request id, method, route, status and duration, never the subject or the token', async () => {
    const { send, lines } = appWithLogs(handle.db)
    await send('/plants?limit=1', {
      headers: { ...tokenHeader(token), 'x-request-id': 'trace-42' },
    })

    const requestLines = lines.filter((line) => line.msg === 'request')
    expect(requestLines).toHaveLength(1)
    expect(requestLines[0]).toMatchObject({
      level: 30,
      requestId: 'trace-42',
      method: 'GET',
      route: '/plants',
      status: 200,
    })
    expect(typeof requestLines[0]?.durationMs).toBe('number')
    expect(JSON.stringify(lines)).not.toContain(token)
    expect(JSON.stringify(lines)).not.toContain('dora')
  })

  test("given an unexpected failure, then it is logged with the request id and the cause chain, the database's words left out", async () => {
    const cause = Object.assign(new Error('driver exploded'), { code: 'XX000' })
    // A database whose every use, however deep (`db.with(…).select(…).prepare(…)`), fails with a
    // driver error wrapped the way Drizzle wraps it.
    const failing: Database = new Proxy(() => {}, {
      get: () => failing,
      apply: () => {
        throw new Error('query failed', { cause })
      },
    }) as unknown as Database
    const { send, lines } = appWithLogs(failing)

    const response = await send('/plants', {
      ...create(3),
      headers: { ...create(3).headers, 'x-request-id': 'boom-1' },
    })

    expect(response.status).toBe(500)
    const failure = lines.find((line) => line.msg === 'unexpected error') as {
      requestId: string
      err: { message: string; cause: Record<string, string> }
    }
    expect(failure.requestId).toBe('boom-1')
    expect(failure.err.message).toBe('query failed')
    expect(failure.err.cause).toMatchObject({ type: 'Error', code: 'XX000' })
    expect(failure.err.cause).not.toHaveProperty('message')
    expect(lines.find((line) => line.msg === 'request failed')).toMatchObject({
      requestId: 'boom-1',
      status: 500,
    })
  })

  test('given LOG_LEVEL warn, then request lines of successful requests are left out', async () => {
    const { send, lines } = appWithLogs(handle.db, 'warn')
    await send('/health')
    expect(lines).toEqual([])
  })
})
