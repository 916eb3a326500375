// The downtime of the log's upgrade (src/keys/log-upgrade.ts) on PostgreSQL: a store at the
// previous version's migrations holding N plaintext events, opened by this version (migrations,
// sealing in batches, VACUUM FULL, ANALYZE, validation), each step timed. The worst case the API allows:
// every name and tag 1,024 characters (hex, so that PostgreSQL cannot compress them away).
// Run: bun test/bench/upgrade.ts [events=100000] [name and tag length=1024] [batch size=5000]
import process from 'node:process'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import type { UpgradeProgress } from '../../src/keys/fenced-rewrite.ts'
import { upgradeLog } from '../../src/keys/log-upgrade.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createLegacyStore } from '../keys/upgrade-legacy-store.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const EVENTS = Number(process.argv[2] ?? 100_000)
const LENGTH = Number(process.argv[3] ?? 1024)
const BATCH = Number(process.argv[4] ?? 5000)
const OWNERS = 1000

const seconds = (since: number) => (performance.now() - since) / 1000
const started = performance.now()
const legacy = await createLegacyStore('postgres', async (db) => {
  await db.execute(sql`
    insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select 'plant:' || n || ':owner-' || (n % ${OWNERS}), 1, 'PlantCreated', 1,
           jsonb_build_object('id', (n * 9007199254740)::text, 'name', left(text, ${LENGTH}),
                              'tag', left(reverse(text), ${LENGTH})),
           jsonb_build_object('owner', 'owner-' || (n % ${OWNERS}), 'requestId', 'request-' || n),
           now()
    from generate_series(1, ${EVENTS}) as n,
         lateral (select string_agg(md5(n::text || ':' || i), '') as text
                  from generate_series(1, (${LENGTH} + 31) / 32) as i) as hex`)
  await db.execute(sql`vacuum analyze events`)
})
if (legacy.storage.kind !== 'postgres') throw new Error('the bench runs on PostgreSQL')
const { url } = legacy.storage
const size = async () => {
  const client = postgres(url, { max: 1, onnotice: () => {} })
  const [row] = await client`select pg_total_relation_size('events') as bytes`
  await client.end()
  return `${Math.round(Number(row?.bytes) / 2 ** 20)} MB`
}
console.log(
  `seeded ${EVENTS.toLocaleString('en')} plaintext events (${await size()}) in ${seconds(started).toFixed(1)} s`,
)

try {
  const steps = new Map<UpgradeProgress['step'], number>()
  const opened = performance.now()
  let upgradeStarted = 0
  await migratePostgresDatabase(
    url,
    async (db, keyring) => {
      upgradeStarted = performance.now()
      await upgradeLog(db, keyring, {
        batchSize: BATCH,
        onProgress: ({ step }) => {
          if (!steps.has(step)) steps.set(step, performance.now())
        },
      })
    },
    TEST_KEYS,
  )
  const total = seconds(opened)
  const at = (step: UpgradeProgress['step']) => steps.get(step) ?? Number.NaN
  const sealing = (at('vacuum') - upgradeStarted) / 1000
  const vacuum = (at('analyze') - at('vacuum')) / 1000
  const analyze = (at('validate') - at('analyze')) / 1000
  const validate = (at('done') - at('validate')) / 1000
  const line = (name: string, value: number) =>
    console.log(`${name.padEnd(34)} ${value.toFixed(2)} s (${Math.round((100 * value) / total)}%)`)
  console.log(
    `open (migrations + upgrade):       ${total.toFixed(2)} s, ${Math.round(EVENTS / total).toLocaleString('en')} events/s`,
  )
  line('  migrations', (upgradeStarted - opened) / 1000)
  line(`  sealing (batches of ${BATCH})`, sealing)
  console.log(`    ${Math.round(EVENTS / sealing).toLocaleString('en')} events/s`)
  line('  VACUUM FULL', vacuum)
  line('  ANALYZE', analyze)
  line('  validation', validate)
  console.log(`events table after: ${await size()}`)
} finally {
  await legacy.cleanup()
}
