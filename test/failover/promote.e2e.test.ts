import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { eventually, SECRET, startReplicaServer, tokenFor } from '../replicas/replica-client.ts'
import { createTestFeed, positionsOf, type TestFeed } from '../support/nats.ts'
import { listEveryPlant, postPlant, tokenHeader } from '../support/plant-client.ts'
import { type PrimaryWithReplica, startPrimaryWithReplica } from '../support/postgres-replica.ts'
import { runCli, type ServerProcess } from '../support/server-process.ts'
import { changesRequest, openSse, plantOf, type SseEvent } from '../support/sse-client.ts'

// Failover (docs/operating.md): the primary crashes under load, the standby is promoted (pg_ctl, as an operator or
// an HA manager does), and the service follows by itself: nothing acknowledged is lost, and the
// feed and the change streams carry on from the new primary.
let pair: PrimaryWithReplica
let feed: TestFeed
let server: ServerProcess | undefined
let url: string

beforeAll(async () => {
  pair = await startPrimaryWithReplica({ synchronous: true })
  feed = await createTestFeed('failover')
  const host = (address: string) => new URL(address).host
  url = `postgres://postgres@${host(pair.primaryUrl)},${host(pair.replicaUrl)}/postgres?target_session_attrs=read-write`
}, 60_000)
// The servers go first and the service is killed: a test that failed mid-failover may have left
// requests that its graceful stop would wait for.
afterAll(async () => {
  pair?.stop()
  await server?.stop('SIGKILL')
  await feed?.drop()
})

type Answer = { status: number; retryAfter: string | null; ms: number; at: number; id: number }

// `workers` creators of fresh plants until stopped; every answer kept.
function writers(baseUrl: string, token: string, workers: number) {
  const answers: Answer[] = []
  let running = true
  let nextId = 1
  const work = async () => {
    while (running) {
      const id = nextId++
      const started = performance.now()
      const response = await postPlant(baseUrl, token, { id, name: `failover ${id}` })
      await response.arrayBuffer()
      answers.push({
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        ms: performance.now() - started,
        at: performance.now(),
        id,
      })
      if (response.status !== 200) await Bun.sleep(100)
    }
  }
  const done = Promise.all(Array.from({ length: workers }, work))
  return {
    answers,
    stop: async () => {
      running = false
      await done
      return answers
    },
  }
}

test('the primary crashes under 4 writers, the standby is promoted: 200/503 only, nothing acknowledged lost, feed and changes carry on', async () => {
  // given the service on both hosts, with the feed on, a change stream open, and 4 writers
  server = await startReplicaServer({ DATABASE_URL: url, ...feed.env })
  const baseUrl = server.url
  const token = await tokenFor('failover')
  const stream = await openSse(changesRequest(baseUrl, token, { after: '0' }))
  const load = writers(baseUrl, token, 4)
  await eventually(
    'creates are acknowledged',
    async () => load.answers.filter((a) => a.status === 200).length > 50,
  )

  // when the primary crashes
  await pair.crashPrimary()
  const crashedAt = performance.now()
  // then, while no host is the primary, creates and /ready answer 503
  await eventually(
    'a create answers 503',
    async () => load.answers.some((answer) => answer.at > crashedAt && answer.status === 503),
    15_000,
  )
  expect((await fetch(`${baseUrl}/ready`)).status).toBe(503)
  await Bun.sleep(2000)

  // when the standby is promoted
  await pair.promoteReplica()
  const promotedAt = performance.now()
  // then creates answer 200 again within 10 s, and /ready is 200
  await eventually(
    'a create answers 200 after the promotion',
    async () => load.answers.some((answer) => answer.at > promotedAt && answer.status === 200),
    10_000,
  )
  const backAfterMs = Math.min(
    ...load.answers.filter((a) => a.at > promotedAt && a.status === 200).map((a) => a.at - promotedAt),
  )
  expect(backAfterMs).toBeLessThan(10_000)
  expect((await fetch(`${baseUrl}/ready`)).status).toBe(200)
  await Bun.sleep(1500)
  const answers = await load.stop()

  // and every answer was a 200 or a 503 with Retry-After, none slower than 15 s
  expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200, 503]))
  expect(answers.filter((a) => a.status === 503 && a.retryAfter === null)).toEqual([])
  expect(Math.max(...answers.map((answer) => answer.ms))).toBeLessThan(15_000)

  // and every acknowledged create is listed once on the new primary
  const acknowledged = answers.filter((a) => a.status === 200).map((a) => `failover ${a.id}`)
  const listed = (await listEveryPlant(baseUrl, token)).map((plant) => plant.name)
  const counts = new Map<string, number>()
  for (const name of listed) counts.set(name, (counts.get(name) ?? 0) + 1)
  expect(acknowledged.filter((name) => counts.get(name) !== 1)).toEqual([])
  expect([...counts.values()].every((count) => count === 1)).toBe(true)

  // and the projection verifies
  const verified = await runCli(['projection', 'verify'], { DATABASE_URL: url, AUTH_JWT_SECRET: SECRET })
  expect(verified.stdout + verified.stderr).not.toContain('drift')
  expect(verified.exitCode).toBe(0)

  // and the feed equals the new primary's log, each event once, in order
  const log = await logOnNewPrimary()
  await feed.waitFor(log.length, 20_000)
  await Bun.sleep(300)
  expect(positionsOf(await feed.read())).toEqual(log)

  // and a change stream resumed with Last-Event-ID delivers every plant after it, once, also new ones
  const before = await stream.collectFor(500)
  await stream.close()
  const lastSeen = before.at(-1)?.id ?? '0'
  const resumed = await openSse(
    new Request(`${baseUrl}/plants/changes`, {
      headers: { ...tokenHeader(token), 'last-event-id': lastSeen },
    }),
  )
  try {
    const expectedAfter = listed.length - before.length
    const after = await resumed.take(expectedAfter, 10_000)
    const late = await postPlant(baseUrl, token, { id: 1_000_000, name: 'after the failover' })
    expect(late.status).toBe(200)
    const [live] = await resumed.take(1, 5_000)
    const seen = [...before, ...after].map((event: SseEvent) => plantOf(event).name)
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.sort()).toEqual([...listed].sort())
    expect(after.every((event) => BigInt(event.id ?? 0) > BigInt(lastSeen))).toBe(true)
    expect(live && plantOf(live).name).toBe('after the failover')
  } finally {
    await resumed.close()
  }
}, 120_000)

async function logOnNewPrimary(): Promise<string[]> {
  const sql = postgres(pair.replicaUrl, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<{ position: string }[]>`select position::text from events order by events.position`
    return rows.map((row) => row.position)
  } finally {
    await sql.end()
  }
}
