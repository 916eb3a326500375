// What the feed's reader pays, per event, to open each event's sealed metadata for its
// traceparent: the same read of the log, opening the data only and opening the metadata as well.
// Run: bun test/bench/open-metadata.ts [events]   (needs the PostgreSQL of the tests)
import process from 'node:process'
import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { seedTestEvents } from './seed.ts'

const EVENTS = Number(process.argv[2] ?? 20_000)
const ROUNDS = 7

const database = await createTestDatabase('bench_open_metadata')
const sql = postgres(database.url, { max: 1, onnotice: () => {} })
try {
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  await seedTestEvents(sql, 1, EVENTS, `'owner-' || (i % 50)`)
  const read = (opened: string) => `
    select ${opened} from events as e join (select pseudonym, plant_store_unwrap(key) as key from owner_keys) as k on k.pseudonym = e.metadata->>'pseudonym'`
  const median = async (query: string) => {
    const times: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now()
      await sql.unsafe(query)
      times.push(performance.now() - started)
    }
    return times.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)] ?? 0
  }
  const data = read('count(plant_store_open(e.data, k.key))')
  const both = read(
    `count(plant_store_open(e.data, k.key)), count(plant_store_open(e.metadata, k.key)->>'traceparent')`,
  )
  for (let pass = 0; pass < 2; pass++) {
    const [dataOnly, withMetadata] = [await median(data), await median(both)]
    const perEvent = (ms: number) => ((ms / EVENTS) * 1000).toFixed(2)
    console.log(
      `per event read: data ${perEvent(dataOnly)} µs, data and metadata ${perEvent(withMetadata)} µs (median of ${ROUNDS} reads of ${EVENTS} events)`,
    )
  }
} finally {
  await sql.end()
  await database.drop()
}
