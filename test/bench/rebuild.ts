// ceiling measured in the same run: the same rows made by one set-based INSERT … SELECT.
// Run: bun test/bench/rebuild.ts [events]   (needs the PostgreSQL of the tests)
import process from 'node:process'
import postgres from 'postgres'
import { rebuildProjection } from '../../src/replay/rebuild-projection.ts'
import { openPostgres } from '../../src/store/database.ts'
import { migratePostgresDatabase } from '../../src/store/migrate.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { sealedSeed } from '../support/sealed-seed.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const EVENTS = Number(process.argv[2] ?? 1_000_000)
const OWNERS = 1000

const database = await createTestDatabase('bench_rebuild')
await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
const sql = postgres(database.url, { max: 1, onnotice: () => {} })
const handle = openPostgres({ keys: TEST_KEYS, url: database.url, poolSize: 4, statementTimeoutMs: 600_000 })
const seconds = (since: number) => (performance.now() - since) / 1000
const rate = (events: number, elapsed: number) =>
  `${Math.round(events / elapsed).toLocaleString('en')} events/s`

try {
  let started = performance.now()
  await sql.unsafe(
    sealedSeed(
      `select 'owner-' || (n % ${OWNERS}) as owner, n * 9007199254740 as id, 'plant ' || n as name,
              case when n % 3 = 0 then null else 'tag ' || (n % 7) end as tag
       from generate_series(1, ${EVENTS}) as n`,
      { project: false },
    ),
  )
  await sql`vacuum analyze events`
  console.log(`seeded ${EVENTS.toLocaleString('en')} events in ${seconds(started).toFixed(1)} s`)

  // The ceiling: the same rows and keys, made inside the database with no round trip, each event
  // opened with its owner's key (the least a fold of a sealed log does).
  started = performance.now()
  await sql`create table plants_ceiling (like plants including defaults)`
  await sql`insert into plants_ceiling (owner, id, name, tag, position)
            select k.owner, (d->>'id')::bigint, d->>'name', d->>'tag', e.position
            from events e join (select pseudonym, owner, plant_store_unwrap(key) as key from owner_keys) k
              on k.pseudonym = e.metadata->>'pseudonym',
                 plant_store_open(e.data, k.key) as d`
  const insertOnly = seconds(started)
  await sql`alter table plants_ceiling add primary key (owner, id)`
  await sql`create index on plants_ceiling (owner, position)`
  const ceiling = seconds(started)
  await sql`drop table plants_ceiling`

  const rss = { before: process.memoryUsage().rss, peak: 0 }
  const sampler = setInterval(() => {
    rss.peak = Math.max(rss.peak, process.memoryUsage().rss)
  }, 50)
  const result = await rebuildProjection(handle.db)
  clearInterval(sampler)

  const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`
  console.log(`ceiling (INSERT … SELECT only):     ${rate(EVENTS, insertOnly)} (${insertOnly.toFixed(2)} s)`)
  console.log(`ceiling (INSERT … SELECT + keys):   ${rate(EVENTS, ceiling)} (${ceiling.toFixed(2)} s)`)
  console.log(
    `rebuild (fold, keys, swap):         ${rate(result.events, result.seconds)} (${result.seconds.toFixed(2)} s, ${result.plants.toLocaleString('en')} plants)`,
  )
  console.log(`rebuild / ceiling with keys:        ${(ceiling / result.seconds).toFixed(2)}`)
  console.log(`rss before ${mb(rss.before)}, peak during the rebuild ${mb(rss.peak)}`)
  // The last line is for machines: `bun run bench` reads it into its report.
  console.log(
    JSON.stringify({
      events: result.events,
      plants: result.plants,
      rebuildEventsPerSecond: Math.round(result.events / result.seconds),
      ceilingEventsPerSecond: Math.round(EVENTS / ceiling),
      ceilingInsertOnlyEventsPerSecond: Math.round(EVENTS / insertOnly),
      ratioToCeiling: Number((ceiling / result.seconds).toFixed(2)),
      rssBeforeMb: Math.round(rss.before / 2 ** 20),
      rssPeakMb: Math.round(rss.peak / 2 ** 20),
    }),
  )
} finally {
  await handle.close()
  await sql.end()
  await database.drop()
}
