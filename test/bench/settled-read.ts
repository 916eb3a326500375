// Wall time of one read of the settled log (the follower's read, which the feed and the change
// streams take from), 10 events at a time, for one checkout: run it for two in turn to compare
// what a change to the reader costs per read.
// Run: bun test/bench/settled-read.ts [root] [reads]   (needs the PostgreSQL of the tests)
import process from 'node:process'
import postgres from 'postgres'
import { openStorage } from '../../src/opening/open-store.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { seedTestEvents } from './seed.ts'

const root = process.argv[2] ?? new URL('../..', import.meta.url).pathname
const READS = Number(process.argv[3] ?? 2000)
const EVENTS = 20_000
const { readSettledEvents } = await import(`${root}/src/event-log/reading.ts`)

const database = await createTestDatabase('bench_settled_read')
const sql = postgres(database.url, { max: 1, onnotice: () => {} })
const storage = await openStorage({
  kind: 'postgres',
  url: database.url,
  poolSize: 2,
  statementTimeoutMs: 10_000,
})
try {
  await seedTestEvents(sql, 1, EVENTS, `'owner-' || (i % 50)`)
  const started = performance.now()
  for (let read = 0; read < READS; read++) {
    const after = BigInt((read * 10) % (EVENTS - 10))
    await readSettledEvents(storage.db, after, BigInt(EVENTS), [], 10)
  }
  const perRead = ((performance.now() - started) / READS) * 1000
  console.log(`${root}: ${perRead.toFixed(0)} µs per read of 10 events (${READS} reads, wall time)`)
} finally {
  await storage.close()
  await sql.end()
  await database.drop()
}
