import { afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { issueToken } from '../../src/auth/issue-token.ts'
import { metricValue, startLoad } from '../support/feed-load.ts'
import { createTestFeed, natsAddress, positionsOf, type TestFeed } from '../support/nats.ts'
import { percentile } from '../support/percentiles.ts'
import { postPlant } from '../support/plant-client.ts'
import { runCli, runServerToExit, type ServerProcess } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { startTcpProxy } from '../support/tcp-proxy.ts'

const SECRET = 'feed-e2e-secret-of-at-least-32-bytes!'

describe('the feed of server processes on PostgreSQL', () => {
  let storage: ServiceStorage
  let sql: postgres.Sql
  let token: string
  const feeds: TestFeed[] = []
  let nextId = 1
  const env = () => storage.env
  const start = (extra: Record<string, string>) => storage.startAnother(extra)
  const feedFor = async (label: string) => {
    const feed = await createTestFeed(label)
    feeds.push(feed)
    return feed
  }
  const logPositions = async () =>
    (await sql<{ position: string }[]>`select position::text from events order by events.position`).map(
      (row) => row.position,
    )
  // Waits until the stream holds the whole log, then checks it holds each event once, in order.
  const expectStreamIsLog = async (feed: TestFeed, withinMs = 15_000) => {
    const log = await logPositions()
    const messages = await feed.waitFor(log.length, withinMs)
    await Bun.sleep(300)
    expect(positionsOf(await feed.read())).toEqual(log)
    return messages
  }
  const load = (urls: () => string[], workers = 8) => {
    const started = startLoad(urls, token, { workers, firstId: nextId })
    nextId += 1_000_000
    return started
  }

  // A database of its own for each test: its log holds only what the test wrote.
  beforeEach(async () => {
    storage = await startService({ label: 'feed', secret: SECRET, instances: 0 })
    sql = postgres(String(storage.databaseUrl), { max: 2, onnotice: () => {} })
  })
  beforeAll(async () => {
    token = await issueToken(new TextEncoder().encode(SECRET), {
      subject: 'feed-e2e',
      ttlSeconds: 3600,
      now: new Date(),
    })
  })
  afterEach(async () => {
    await sql.end()
    // Its servers are killed before the feeds they publish to are dropped.
    await storage.stop()
    for (const feed of feeds.splice(0)) await feed.drop()
  })

  test('a SIGKILL mid-burst and a restart: every event in the stream once, in log order', async () => {
    // given a server publishing a burst of creations
    const feed = await feedFor('crash')
    let server = await start(feed.env)
    const burst = load(() => [server.url], 16)
    await feed.waitFor(50)
    // when it is killed mid-burst and started again
    server.process.kill('SIGKILL')
    await server.process.exited
    const seen = await burst.stop()
    expect(seen.failed).toBeGreaterThan(0)
    server = await start(feed.env)
    // then
    await expectStreamIsLog(feed)
    expect((await logPositions()).length).toBeGreaterThanOrEqual(seen.acknowledged)
  })

  test('three instances, then two: the publishing one is killed and another takes over within seconds', async () => {
    // given three instances taking creations
    const feed = await feedFor('instances')
    const instances = await Promise.all([start(feed.env), start(feed.env), start(feed.env)])
    const alive = new Set(instances)
    const burst = load(() => [...alive].map((server) => server.url))
    await expectStreamIsLogSoFar(feed)
    // when the leader dies, twice
    for (let round = 0; round < 2; round++) {
      const leader = await leaderOf([...alive])
      leader.process.kill('SIGKILL')
      alive.delete(leader)
      await leader.process.exited
      const killedAt = Date.now()
      const count = (await feed.read()).length
      // then another publishes within seconds
      await feed.waitFor(count + 20, 8000)
      expect(Date.now() - killedAt).toBeLessThan(8000)
    }
    const seen = await burst.stop()
    expect(seen.statuses).toEqual([])
    await expectStreamIsLog(feed)
  })

  test('a NATS outage under load: creates stay 200 and fast, /ready 200, the feed catches up once', async () => {
    // given a server reaching NATS through a proxy
    const feed = await feedFor('outage')
    const proxy = startTcpProxy(natsAddress())
    const server = await start({ ...feed.env, EVENTS_NATS_URL: `nats://127.0.0.1:${proxy.port}` })
    try {
      const before = load(() => [server.url], 4)
      await Bun.sleep(1500)
      const usual = await before.stop()
      // when NATS goes away under load
      const during = load(() => [server.url], 4)
      await Bun.sleep(300)
      proxy.cut('reset')
      await Bun.sleep(2500)
      const ready = await fetch(`${server.url}/ready`)
      const connected = await metricValue(server.url, 'plant_store_feed_connected')
      const seen = await during.stop()
      // then creates went on as usual and the service stays ready
      expect(seen.statuses).toEqual([])
      expect(seen.failed).toBe(0)
      expect(ready.status).toBe(200)
      expect(connected).toBe(0)
      // (a create that waited for NATS would take seconds; the margin is for a busy machine)
      expect(percentile(seen.latenciesMs, 0.5)).toBeLessThan(
        Math.max(percentile(usual.latenciesMs, 0.5) * 3, 100),
      )
      expect(percentile(seen.latenciesMs, 0.99)).toBeLessThan(1000)
      // and once NATS is back, the stream catches up by itself, each event once
      const lagWhileDown = await metricValue(server.url, 'plant_store_feed_lag_events')
      expect(lagWhileDown).toBeGreaterThan(0)
      proxy.restore()
      const restoredAt = Date.now()
      await expectStreamIsLog(feed, 10_000)
      expect(Date.now() - restoredAt).toBeLessThan(10_000)
      // and a second cut in the middle of publishing changes nothing
      const again = load(() => [server.url], 4)
      await Bun.sleep(500)
      proxy.cut('reset')
      await Bun.sleep(1000)
      proxy.restore()
      await Bun.sleep(500)
      await again.stop()
      await expectStreamIsLog(feed, 10_000)
      expect(await metricValue(server.url, 'plant_store_feed_connected')).toBe(1)
    } finally {
      proxy.stop()
    }
  })

  test('a publishing instance that loses NATS hands over to one that still reaches it', async () => {
    // given: the first instance leads, through a proxy; a second reaches NATS directly
    const feed = await feedFor('handover')
    const proxy = startTcpProxy(natsAddress())
    try {
      const cut = await start({ ...feed.env, EVENTS_NATS_URL: `nats://127.0.0.1:${proxy.port}` })
      const other = await start(feed.env)
      const burst = load(() => [cut.url, other.url], 4)
      await Bun.sleep(1000)
      expect(await leaderOf([cut, other])).toBe(cut)
      // when the leader's way to NATS is cut
      proxy.cut('reset')
      const cutAt = Date.now()
      const count = (await feed.read()).length
      // then the other one publishes within seconds, and the stream is the log
      await feed.waitFor(count + 20, 20_000)
      expect(Date.now() - cutAt).toBeLessThan(20_000)
      await burst.stop()
      await expectStreamIsLog(feed)
      expect(await metricValue(other.url, 'plant_store_feed_published_total')).toBeGreaterThan(0)
    } finally {
      proxy.stop()
    }
  })

  test('a server started while NATS is down serves, and publishes once NATS answers', async () => {
    // given
    const feed = await feedFor('late_nats')
    const proxy = startTcpProxy(natsAddress())
    proxy.cut('reset')
    try {
      // when
      const server = await start({ ...feed.env, EVENTS_NATS_URL: `nats://127.0.0.1:${proxy.port}` })
      const created = await postPlant(server.url, token, { id: nextId++, name: 'while down' })
      expect(created.status).toBe(200)
      expect((await fetch(`${server.url}/ready`)).status).toBe(200)
      proxy.restore()
      // then
      await expectStreamIsLog(feed, 10_000)
    } finally {
      proxy.stop()
    }
  })

  test('metrics and feed status show how far the feed is', async () => {
    // given
    const feed = await feedFor('status')
    const server = await start(feed.env)
    await postPlant(server.url, token, { id: nextId++, name: 'counted' })
    const log = await logPositions()
    await expectStreamIsLog(feed)
    // when
    const status = await runCli(['feed', 'status'], { ...env(), ...feed.env })
    // then
    expect(status.exitCode).toBe(0)
    const head = log
      .map(BigInt)
      .sort((a, b) => (a < b ? -1 : 1))
      .at(-1)
    expect(status.stdout).toContain(`last published position ${log.at(-1)}`)
    expect(status.stdout).toContain(`log head: position ${head} (${log.length} events); up to date`)
    expect(await metricValue(server.url, 'plant_store_feed_published_total')).toBe(log.length)
    expect(await metricValue(server.url, 'plant_store_feed_lag_events')).toBe(0)
    expect(await metricValue(server.url, 'plant_store_feed_connected')).toBe(1)
  })

  test('a stream whose subjects miss the feed stops the start naming EVENTS_NATS_STREAM', async () => {
    const feed = await feedFor('bad_subjects')
    await feed.create({ subjects: [`${feed.prefix}.other.>`] })
    const { stderr, exitCode } = await runServerToExit({ ...env(), ...feed.env })
    expect(exitCode).toBe(2)
    expect(stderr).toContain('plant store cannot start: EVENTS_NATS_STREAM')
  })

  test('a bad EVENTS_NATS_URL stops the start naming it', async () => {
    const { stderr, exitCode } = await runServerToExit({ ...env(), EVENTS_NATS_URL: 'localhost:4222' })
    expect(exitCode).toBe(2)
    expect(stderr).toContain('EVENTS_NATS_URL')
  })

  // The stream holds everything written so far (while writes go on), each once and in log order:
  // what it holds is the start of the log as read after it (the feed publishes settled events
  // only, so nothing can commit before them any more).
  async function expectStreamIsLogSoFar(feed: TestFeed) {
    await Bun.sleep(500)
    const written = await logPositions()
    const published = positionsOf(await feed.waitFor(written.length))
    const log = await logPositions()
    expect(published).toEqual(log.slice(0, published.length))
  }
})

async function leaderOf(servers: ServerProcess[]): Promise<ServerProcess> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    for (const server of servers) {
      if (((await metricValue(server.url, 'plant_store_feed_published_total')) ?? 0) > 0) {
        const first = await metricValue(server.url, 'plant_store_feed_published_total')
        await Bun.sleep(300)
        if (((await metricValue(server.url, 'plant_store_feed_published_total')) ?? 0) > (first ?? 0))
          return server
      }
    }
    await Bun.sleep(100)
  }
  throw new Error('no instance publishes')
}
