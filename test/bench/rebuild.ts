// The rebuild of the projection on a sealed log of N events, as `projection rebuild` runs it: each
// batch read opened in the service and its rows written in one statement. Prints the rate and the
// peak memory of this process (RSS, sampled) during the rebuild, the same figures, under the same
// names, as the bench of the version that folded the log inside PostgreSQL (918831f), so the two
// can be run side by side (docs/performance.md, Rebuild).
// Run: bun test/bench/rebuild.ts [events]   (needs the PostgreSQL of the tests)
import process from 'node:process'
import postgres from 'postgres'
import { openPostgres } from '../../src/database/database.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { seedSealed } from '../support/sealed-seed.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const EVENTS = Number(process.argv[2] ?? 1_000_000)
const OWNERS = 1000

const database = await createTestDatabase('bench_rebuild')
await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
// Two connections: the seed reads its source through a cursor on one and writes on the other.
const sql = postgres(database.url, { max: 2, onnotice: () => {} })
const handle = openPostgres({ keys: TEST_KEYS, url: database.url, poolSize: 4, statementTimeoutMs: 0 })
const seconds = (since: number) => (performance.now() - since) / 1000
const rate = (events: number, elapsed: number) =>
  `${Math.round(events / elapsed).toLocaleString('en')} events/s`

try {
  const started = performance.now()
  await seedSealed(
    sql,
    handle.keyring,
    `select 'owner-' || (n % ${OWNERS}) as owner, n * 9007199254740 as id, 'plant ' || n as name,
            case when n % 3 = 0 then null else 'tag ' || (n % 7) end as tag
     from generate_series(1, ${EVENTS}) as n`,
    { project: false },
  )
  await sql`vacuum analyze events`
  console.log(`seeded ${EVENTS.toLocaleString('en')} events in ${seconds(started).toFixed(1)} s`)
  Bun.gc(true)

  const rss = { before: process.memoryUsage().rss, peak: 0 }
  const sampler = setInterval(() => {
    rss.peak = Math.max(rss.peak, process.memoryUsage().rss)
  }, 50)
  const result = await rebuildProjection(handle.db, handle.keyring)
  clearInterval(sampler)

  const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`
  console.log(
    `rebuild (fold, keys, swap):         ${rate(result.events, result.seconds)} (${result.seconds.toFixed(2)} s, ${result.plants.toLocaleString('en')} plants)`,
  )
  console.log(`rss before ${mb(rss.before)}, peak during the rebuild ${mb(rss.peak)}`)
  // The last line is for machines: `bun run bench` reads it into its report.
  console.log(
    JSON.stringify({
      events: result.events,
      plants: result.plants,
      rebuildEventsPerSecond: Math.round(result.events / result.seconds),
      rebuildSeconds: Number(result.seconds.toFixed(2)),
      rssBeforeMb: Math.round(rss.before / 2 ** 20),
      rssPeakMb: Math.round(rss.peak / 2 ** 20),
    }),
  )
} finally {
  await handle.close()
  await sql.end()
  await database.drop()
}
