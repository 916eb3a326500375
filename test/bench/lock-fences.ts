// What the lock fences (locks/advisory-lock.ts) cost a create, counted rather than timed (the
// machine may be shared): per create, the statements the service sends and the transactions
// PostgreSQL counts for the database (its statistics are flushed on their own schedule: a few
// percent either way), after a rebuild has taken and released its locks.
// Run: bun test/bench/lock-fences.ts [creates]   (needs the PostgreSQL of the tests)
import process from 'node:process'
import { drizzle } from 'drizzle-orm/postgres-js'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { postgresClient } from '../../src/database/postgres-client.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createPlant } from '../../src/plants/create-plant.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const CREATES = Number(process.argv[2] ?? 1000)
const OWNERS = 100

const database = await createTestDatabase('bench_lock_fences')
await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
const client = postgresClient(database.url, { max: 4, onnotice: () => {} })
const admin = postgresClient(database.url, { max: 1, onnotice: () => {} })
let statements = 0
const db = drizzle({ client, logger: { logQuery: () => void statements++ } })
const keyring = createKeyring(TEST_KEYS)
const keys = ownerKeyCache(keyring)
const create = (id: number) =>
  createPlant(
    db,
    keys,
    {
      type: 'CreatePlant',
      owner: `owner ${id % OWNERS}`,
      plant: { id: BigInt(id), name: `plant ${id}`, tag: null },
      now: new Date(),
    },
    `request ${id}`,
  )
const counters = async () => {
  const [row] = await admin<{ commits: string }[]>`
    select xact_commit::text as commits from pg_stat_database where datname = current_database()`
  return row as { commits: string }
}

try {
  for (let id = 0; id < OWNERS; id++) await create(id)
  // A rebuild first, as a store that has had one: its locks leave nothing behind a create meets.
  await rebuildProjection(db, keyring)
  await admin`select pg_stat_force_next_flush()`
  const before = await counters()
  statements = 0
  for (let id = OWNERS; id < OWNERS + CREATES; id++) await create(id)
  await admin`select pg_stat_force_next_flush()`
  const after = await counters()
  const commits = Number(after.commits) - Number(before.commits)
  console.log(`creates: ${CREATES}`)
  console.log(`statements per create (sent by the service): ${(statements / CREATES).toFixed(2)}`)
  console.log(
    `transactions committed per create (PostgreSQL, the counter's own reads included): ${(commits / CREATES).toFixed(2)}`,
  )
  statements = 0
  await rebuildProjection(db, keyring)
  console.log(
    `statements of a rebuild through the pool (its swap is on the lock's connection): ${statements}`,
  )
} finally {
  await client.end()
  await admin.end()
  await database.drop()
}
