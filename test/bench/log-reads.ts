import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { issueToken } from '../../src/auth/issue-token.ts'
import { migratePostgresDatabase } from '../../src/store/migrate.ts'
import { createTestFeed } from '../support/nats.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { type Bench, startService } from './services.ts'

// `bun test/bench/log-reads.ts [--service-root DIR]`: how often one instance reads the event log
// with the feed and change streams on, idle and under creates. A read of the log is a scan of the
// events table other than a create's look at its own stream: PostgreSQL's own counters
// (pg_stat_user_indexes, pg_stat_user_tables), so the same figure for any version of the service.
const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    writers: { type: 'string', default: '8' },
    streams: { type: 'string', default: '20' },
    'service-root': { type: 'string' },
  },
})
const seconds = Number(flags.seconds)
const bench: Bench = {
  secret: crypto.randomUUID() + crypto.randomUUID(),
  poolSize: 10,
  logLevel: 'warn',
  serviceRoot: flags['service-root'],
}

const database = await createTestDatabase('bench_log_reads')
const feed = await createTestFeed('bench_log_reads')
await migratePostgresDatabase(database.url)
const sql = postgres(database.url, { max: 1, onnotice: () => {} })
const server = await startService(bench, database.url, feed.env)
const streams: AbortController[] = []
try {
  const secret = new TextEncoder().encode(bench.secret)
  const token = (subject: string) => issueToken(secret, { subject, ttlSeconds: 3600, now: new Date() })
  for (let index = 0; index < Number(flags.streams); index++) {
    const stop = new AbortController()
    streams.push(stop)
    const response = await fetch(`${server.url}/plants/changes`, {
      headers: { authorization: `Bearer ${await token(`owner ${index % 8}`)}` },
      signal: stop.signal,
    })
    void response.body?.pipeTo(new WritableStream(), { signal: stop.signal }).catch(() => {})
  }
  const logReads = async () => {
    // The statistics reach the views within a second of a statement.
    await Bun.sleep(1500)
    const [row] = await sql<{ reads: string }[]>`
      select (select coalesce(sum(idx_scan), 0) from pg_stat_user_indexes
              where relname = 'events' and indexrelname <> 'events_stream_version_unique')
           + (select coalesce(seq_scan, 0) from pg_stat_user_tables where relname = 'events') as reads`
    return Number(row?.reads)
  }
  const measure = async (label: string, load: () => Promise<number>) => {
    const before = await logReads()
    const started = performance.now()
    const creates = await load()
    const elapsed = (performance.now() - started) / 1000
    const reads = (await logReads()) - before
    console.log(
      `${label}: ${(reads / elapsed).toFixed(1)} log reads/s over ${elapsed.toFixed(1)} s` +
        (creates > 0 ? `, ${creates} creates (${(creates / elapsed).toFixed(0)}/s)` : ''),
    )
  }
  await measure('idle', async () => {
    await Bun.sleep(seconds * 1000)
    return 0
  })
  await measure(`${flags.writers} writers`, async () => {
    const deadline = performance.now() + seconds * 1000
    let created = 0
    await Promise.all(
      Array.from({ length: Number(flags.writers) }, async (_, writer) => {
        const authorization = `Bearer ${await token(`owner ${writer % 8}`)}`
        for (let id = 0; performance.now() < deadline; id++) {
          const response = await fetch(`${server.url}/plants`, {
            method: 'POST',
            headers: { authorization, 'content-type': 'application/json' },
            body: JSON.stringify({ id: writer * 1_000_000 + id, name: `p${id}` }),
          })
          await response.arrayBuffer()
          if (response.status === 200) created++
        }
      }),
    )
    return created
  })
} finally {
  for (const stop of streams) stop.abort()
  await server.stop()
  await sql.end()
  await feed.drop()
  await database.drop()
}
