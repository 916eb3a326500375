import { readdirSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import postgres from 'postgres'
import { openPostgres } from '../../src/database/database.ts'
import { soleLeadership } from '../../src/feed/leadership.ts'
import { feedStream } from '../../src/feed/nats-stream.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createLogger } from '../../src/shared/logger.ts'
import { metricValue } from '../support/feed-load.ts'
import { createTestFeed, TEST_NATS_URL } from '../support/nats.ts'
import { median, percentile } from '../support/percentiles.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { createTestDatabase } from '../support/postgres.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { runTestRelay } from '../support/test-relay.ts'
import { ensureWrk, runWrk } from './load.ts'
import { seedTestEvents } from './seed.ts'
import { type Bench, startService } from './services.ts'
import { writeFixture } from './tokens.ts'

// `bun test/bench/feed.ts`: what the event feed costs and how far behind the log it runs.
const { values: flags } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    'probe-every-ms': { type: 'string', default: '20' },
    // Relays publishing the same log at once, as instances without a leader would.
    publishers: { type: 'string', default: '1' },
    'skip-load': { type: 'boolean', default: false },
  },
})
const bench: Bench = { secret: crypto.randomUUID() + crypto.randomUUID(), poolSize: 10, logLevel: 'info' }
const rounds = Number(flags.rounds)
const seconds = Number(flags.seconds)

async function withDatabase<T>(label: string, use: (url: string) => Promise<T>): Promise<T> {
  const database = await createTestDatabase(label)
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  try {
    return await use(database.url)
  } finally {
    await database.drop()
  }
}

type Publishing = { eventsPerSecond: number; cpuMsPerThousand: number; natsCpuMsPerThousand?: number }

// The CPU time so far of a nats-server on this machine, in ms, from /proc (Linux); undefined
// when there is none to read. Other users of that server are counted too: run it on a quiet one.
function natsServerCpuMs(): number | undefined {
  try {
    const pid = readdirSync('/proc').find(
      (entry) => /^\d+$/.test(entry) && readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'nats-server',
    )
    if (pid === undefined) return undefined
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime, fields 14 and 15 of stat, in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

// The relay alone, publishing a log that is already there into an empty stream; `publishers`
// relays at once race for each message (the stream keeps one copy), at what CPU of this process.
async function measurePublishing(events: number, publishers: number): Promise<Publishing> {
  return withDatabase('bench_feed_publish', async (url) => {
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    await seedTestEvents(sql, 1, events, `'owner-' || (i % 100)`)
    await sql.end()
    const storage = openPostgres({ keys: TEST_KEYS, url, poolSize: 4, statementTimeoutMs: 60_000 })
    const feed = await createTestFeed('bench_publish')
    const nc = await connect({ servers: TEST_NATS_URL })
    const started = performance.now()
    const cpuBefore = process.cpuUsage()
    const natsBefore = natsServerCpuMs()
    const relays = Array.from({ length: publishers }, () =>
      runTestRelay(storage, {
        stream: feedStream(nc, { stream: feed.stream, subjectPrefix: feed.prefix }),
        leadership: soleLeadership,
        messages: { subjectPrefix: feed.prefix, source: 'bench' },
        logger: createLogger('warn'),
      }),
    )
    // Counted, not read: reading the stream here would be charged to the relays.
    const jsm = await jetstreamManager(nc)
    const deadline = Date.now() + 600_000
    const stored = () =>
      jsm.streams.info(feed.stream).then(
        (info) => info.state.messages,
        () => 0,
      )
    while ((await stored()) < events) {
      if (Date.now() > deadline) throw new Error(`the stream did not reach ${events} messages`)
      await Bun.sleep(20)
    }
    const elapsed = (performance.now() - started) / 1000
    const cpu = process.cpuUsage(cpuBefore)
    const natsAfter = natsServerCpuMs()
    for (const relay of relays) await relay.stop()
    await nc.close()
    await feed.drop()
    await storage.close()
    return {
      eventsPerSecond: events / elapsed,
      cpuMsPerThousand: (cpu.user + cpu.system) / events,
      natsCpuMsPerThousand:
        natsBefore === undefined || natsAfter === undefined
          ? undefined
          : ((natsAfter - natsBefore) * 1000) / events,
    }
  })
}

type Probe = { stop: () => Promise<number[]> }

// One create every `everyMs` by an owner of its own; the delay from its 200 to its message,
// delivered by a consumer of the stream (so after the stream stored it).
async function probeDelays(server: ServerProcess, stream: string, everyMs: number): Promise<Probe> {
  const { tokens } = await writeFixture(bench.secret, `probe-${crypto.randomUUID().slice(0, 8)}`, 1)
  const token = tokens[0] as string
  const acknowledged = new Map<string, number>()
  const arrived = new Map<string, number>()
  const nc = await connect({ servers: TEST_NATS_URL })
  const consumer = await jetstream(nc).consumers.get(stream, { deliver_policy: DeliverPolicy.New })
  const messages = await consumer.consume()
  const consuming = (async () => {
    for await (const message of messages) {
      arrived.set(message.json<{ data: { id: string } }>().data.id, performance.now())
    }
  })()
  let stopped = false
  let next = 9_000_000_000_000 + Math.floor(Math.random() * 1_000_000_000)
  const sending = (async () => {
    while (!stopped) {
      const id = String(next++)
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { ...tokenHeader(token), 'content-type': 'application/json' },
        body: `{"id": ${id}, "name": "probe"}`,
      })
      await response.arrayBuffer()
      if (response.status === 200) acknowledged.set(id, performance.now())
      await Bun.sleep(everyMs)
    }
  })()
  return {
    stop: async () => {
      stopped = true
      await sending
      const deadline = Date.now() + 30_000
      while (Date.now() < deadline && [...acknowledged.keys()].some((id) => !arrived.has(id)))
        await Bun.sleep(50)
      await messages.close()
      await consuming.catch(() => {})
      await nc.close()
      return [...acknowledged].flatMap(([id, at]) => {
        const seen = arrived.get(id)
        return seen === undefined ? [] : [Math.max(0, seen - at)]
      })
    },
  }
}

type Round = { requestsPerSecond: number; lagAtEnd?: number }

// Each round loads the service with the feed off, then the one with the feed on, with nothing
// else running, for the cost; then the feed-on service again with a probe and a consumer, for the
// delay. The consumer reads every message (a JetStream stream cannot be filtered by owner), and on
// these two cores its CPU would otherwise be charged to the feed.
async function measureUnderLoad() {
  ensureWrk()
  const fixture = await writeFixture(bench.secret, 'feed-bench', 100)
  return withDatabase('bench_feed_off', (offUrl) =>
    withDatabase('bench_feed_on', async (onUrl) => {
      const feed = await createTestFeed('bench_load')
      const off = await startService(bench, offUrl)
      const on = await startService(bench, onUrl, feed.env)
      void off.process.stdout.pipeTo(new WritableStream()).catch(() => {})
      const results: { off: Round[]; on: Round[]; delays: number[] } = { off: [], on: [], delays: [] }
      let runs = 0
      const load = (server: ServerProcess) =>
        runWrk({
          url: server.url,
          mode: 'create',
          tokensFile: fixture.tokensFile,
          idBase: runs++ * 1_000_000_000,
          connections: Number(flags.connections),
          seconds,
          pid: server.process.pid,
        })
      try {
        for (let round = 0; round < rounds; round++) {
          const offLoad = await load(off)
          results.off.push({ requestsPerSecond: offLoad.requestsPerSecond })
          const onLoad = await load(on)
          const lagAtEnd = await metricValue(on.url, 'plant_store_feed_lag_events')
          results.on.push({ requestsPerSecond: onLoad.requestsPerSecond, lagAtEnd })
          const probe = await probeDelays(on, feed.stream, Number(flags['probe-every-ms']))
          const probed = await load(on)
          const delays = await probe.stop()
          results.delays.push(...delays)
          console.log(
            `round ${round + 1}: feed off ${offLoad.requestsPerSecond.toFixed(0)} POST req/s, ` +
              `feed on ${onLoad.requestsPerSecond.toFixed(0)} (lag at the end ${lagAtEnd}); ` +
              `with the probe's consumer ${probed.requestsPerSecond.toFixed(0)}, ${delays.length} probes`,
          )
        }
      } finally {
        off.process.kill('SIGTERM')
        on.process.kill('SIGTERM')
        await Promise.all([off.process.exited, on.process.exited])
        await feed.drop()
      }
      return results
    }),
  )
}

const publishers = Number(flags.publishers)
const publishing = await measurePublishing(Number(flags.events), publishers)
const publishRate = publishing.eventsPerSecond
console.log(
  `feed throughput: ${publishRate.toFixed(0)} events/s, ${publishing.cpuMsPerThousand.toFixed(1)} ms CPU ` +
    `per 1000 events, nats-server ${publishing.natsCpuMsPerThousand?.toFixed(1) ?? '?'} ms ` +
    `(${flags.events} events into an empty stream, ${publishers} publisher(s))`,
)
if (flags['skip-load']) process.exit(0)
const { off, on, delays } = await measureUnderLoad()
delays.sort((a, b) => a - b)
const offRate = median(off.map((round) => round.requestsPerSecond))
const onRate = median(on.map((round) => round.requestsPerSecond))
console.log(`
| measure | value |
|---|---:|
| feed throughput, ${flags.events} events into an empty stream | ${publishRate.toFixed(0)} events/s |
| POST req/s, feed off (median of ${rounds}) | ${offRate.toFixed(0)} |
| POST req/s, feed on (median of ${rounds}) | ${onRate.toFixed(0)} (${(((onRate - offRate) / offRate) * 100).toFixed(1)}%) |
| delay from a create's 200 to its message in the stream, p50 | ${percentile(delays, 0.5).toFixed(1)} ms |
| the same, p99 (${delays.length} probes) | ${percentile(delays, 0.99).toFixed(1)} ms |
| lag at the end of each run (events) | ${on.map((round) => round.lagAtEnd).join(', ')} |`)
process.exit(0)
