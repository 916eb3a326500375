import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openPostgres } from '../../src/database/database.ts'
import { listEveryPlant, postPlant, tokenHeader } from '../support/plant-client.ts'
import { POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { checkProjection } from '../support/projection-check.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'
import { type CutMode, startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// The server's own deadline: a request whose database went silent is answered 503 by then.
const SERVER_DEADLINE_MS = 4_000
// Bounds, not speed targets: the machine is shared. No call may take longer than this.
const REQUEST_BOUND_MS = SERVER_DEADLINE_MS + 4_000
const RECOVERY_BOUND_MS = 8_000
const WORKERS = 6

type Outcome = {
  kind: 'create' | 'list'
  status: number
  ms: number
  retryAfter: string | null
  body: unknown
}

let nextId = 1
async function timedCall(server: ServerProcess, token: string, kind: Outcome['kind']): Promise<Outcome> {
  const started = performance.now()
  const signal = AbortSignal.timeout(REQUEST_BOUND_MS + 5_000)
  const response =
    kind === 'create'
      ? await postPlant(server.url, token, { id: nextId, name: `plant-${nextId++}` }, signal)
      : await fetch(`${server.url}/plants?limit=20`, {
          headers: tokenHeader(token),
          signal,
        })
  const body = await response.json().catch(() => 'not JSON')
  return {
    kind,
    status: response.status,
    ms: performance.now() - started,
    retryAfter: response.headers.get('retry-after'),
    body,
  }
}

async function loadWhile(
  call: (kind: Outcome['kind']) => Promise<Outcome>,
  running: () => boolean,
  outcomes: Outcome[],
  acknowledged: string[],
) {
  const worker = async (index: number) => {
    for (let round = 0; running(); round++) {
      const kind = (index + round) % 3 === 0 ? 'list' : 'create'
      const outcome = await call(kind)
      outcomes.push(outcome)
      if (kind === 'create' && outcome.status === 200)
        acknowledged.push((outcome.body as { name: string }).name)
      if (outcome.status !== 200) await Bun.sleep(50)
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, (_, index) => worker(index)))
}

describe.each<CutMode>(['reset', 'silent'])('when the database connection is cut (%s)', (how) => {
  let service: Service
  let proxy: TcpProxy
  let server: ServerProcess
  let token: string

  beforeAll(async () => {
    proxy = startTcpProxy({ hostname: '127.0.0.1', port: Number(new URL(POSTGRES_ADMIN_URL).port || 5432) })
    const throughProxy = (url: string) => {
      const proxied = new URL(url)
      proxied.hostname = '127.0.0.1'
      proxied.port = String(proxy.port)
      return proxied.toString()
    }
    service = await startService({
      label: 'outage',
      databaseUrl: throughProxy,
      env: { DATABASE_POOL_SIZE: '5', REQUEST_TIMEOUT_MS: String(SERVER_DEADLINE_MS) },
    })
    server = service.server
    token = await service.tokenFor('ops', 600)
  }, 30_000)
  afterAll(async () => {
    await server?.stop('SIGTERM')
    proxy?.stop()
    await service?.stop()
  })

  test('an outage under load answers 503 with Retry-After, never 500 or a hang, and heals by itself', async () => {
    // given a server under steady load, reaching PostgreSQL through a proxy we control
    const call = (kind: Outcome['kind']) => timedCall(server, token, kind)
    const outcomes: Outcome[] = []
    const acknowledged: string[] = []
    let running = true
    const load = loadWhile(call, () => running, outcomes, acknowledged)
    await Bun.sleep(1_500)
    expect(acknowledged.length).toBeGreaterThan(0)
    const pid = server.process.pid

    // when the database goes away under it for a while (how: see CutMode), then comes back
    proxy.cut(how)
    const cutAt = outcomes.length
    await Bun.sleep(SERVER_DEADLINE_MS + 2_000)
    // while cut, the process is alive for its supervisor and unready for the load balancer
    expect(
      (await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(REQUEST_BOUND_MS) })).status,
    ).toBe(200)
    expect(
      (await fetch(`${server.url}/ready`, { signal: AbortSignal.timeout(REQUEST_BOUND_MS) })).status,
    ).toBe(503)
    const duringCut = outcomes.slice(cutAt)
    proxy.restore()
    const restoredAt = performance.now()
    let recoveredAfterMs = Number.POSITIVE_INFINITY
    while (performance.now() - restoredAt < RECOVERY_BOUND_MS + 5_000) {
      if ((await call('list')).status === 200) {
        recoveredAfterMs = performance.now() - restoredAt
        break
      }
      await Bun.sleep(100)
    }
    await Bun.sleep(2_000)
    running = false
    await load

    // then while cut, calls failed cleanly: 503 with Retry-After and the Error body
    expect(duringCut.filter((outcome) => outcome.status === 503).length).toBeGreaterThan(0)
    for (const outcome of outcomes) {
      expect([200, 503]).toContain(outcome.status)
      expect(outcome.ms).toBeLessThan(REQUEST_BOUND_MS)
      if (outcome.status === 503) {
        expect(Number(outcome.retryAfter)).toBeGreaterThan(0)
        expect(outcome.body).toEqual({ error: 503, message: expect.stringMatching(/\S/) })
      }
    }
    // and the service serves normally again within a few seconds, without a restart
    expect(recoveredAfterMs).toBeLessThan(RECOVERY_BOUND_MS)
    expect({ pid: server.process.pid, exitCode: server.process.exitCode }).toEqual({ pid, exitCode: null })
    expect((await fetch(`${server.url}/ready`)).status).toBe(200)
    const after = await Promise.all(
      Array.from({ length: 10 }, (_, index) => call(index % 2 ? 'list' : 'create')),
    )
    expect(after.map((outcome) => outcome.status)).toEqual(Array(10).fill(200))
    acknowledged.push(
      ...after.filter((o) => o.kind === 'create').map((o) => (o.body as { name: string }).name),
    )

    // and no acknowledged write is missing, nor is any listed twice
    const listed = (await listEveryPlant(server.url, token)).map((plant) => plant.name)
    expect(new Set(listed).size).toBe(listed.length)
    for (const name of acknowledged) expect(listed).toContain(name)
    const direct = openPostgres({
      keys: TEST_KEYS,
      url: String(service.databaseUrl),
      poolSize: 1,
      statementTimeoutMs: 10_000,
    })
    try {
      const report = await checkProjection(direct.db, direct.keyring)
      expect(report).toEqual({ events: listed.length, plants: listed.length, mismatches: 0 })
    } finally {
      await direct.close()
    }
  }, 60_000)
})
