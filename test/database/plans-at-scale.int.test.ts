import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { rowsOf } from '../../src/database/database.ts'
import { settleNow } from '../../src/event-log/horizon.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { readSettledEvents } from '../../src/event-log/reading.ts'
import { createPlant, createPlants } from '../../src/plants/create-plant.ts'
import { listPlants } from '../../src/plants/listing.ts'
import { openTestStorage, type TestStorage } from '../support/storage.ts'

// The service's statements are prepared once per connection and planned once (a generic plan), so
// a plan made while the tables were small must still be right once they are large, before anything
// analyzes them (autovacuum may be off, as on this machine's CI server). Joins that PostgreSQL may
// plan as it likes would read every key, or every event, once the tables are large: the
// statements probe an index per row instead. (A plan made after an ANALYZE of small tables scans
// them until the next ANALYZE or until the connection is replaced, 30 to 60 minutes.)
let handle: TestStorage
let admin: postgres.Sql
beforeAll(async () => {
  // One connection: the statements are prepared, and planned, on it while the store is small.
  handle = await openTestStorage('postgres', {
    label: 'plans_at_scale',
    poolSize: 1,
    statementTimeoutMs: 10_000,
  })
  admin = postgres(String(handle.url), { max: 1, onnotice: () => {} })
})
afterAll(async () => {
  await admin.end()
  await handle.close()
})

const command = (owner: string, id: bigint) => ({
  type: 'CreatePlant' as const,
  owner,
  plant: { id, name: `plant ${id}`, tag: null },
  now: new Date(),
})

// Creates in one batch (group commit's statement), each answered 200.
async function createBatch(owner: string, ids: bigint[]) {
  const results = await createPlants(
    handle.db,
    ownerKeyCache(handle.keyring),
    ids.map((id) => ({ command: command(owner, id), requestId: `r${id}` })),
  )
  expect(results.map((result) => result.status)).toEqual(ids.map(() => 'fulfilled'))
}

// The log after a position, as the follower of the feed and the change streams reads it.
async function readLog(after: bigint) {
  const settled = await settleNow(handle.db)
  return (await readSettledEvents(handle.db, handle.keyring, after, settled, [], 1000)).events
}

// Sequential scans of the store's tables, and the rows read from them, so far, as the statistics
// say once this session's are in.
async function tableReads() {
  await handle.db.execute(sql`select pg_stat_force_next_flush()`)
  await handle.db.execute(sql`select 1`)
  await admin`select pg_stat_clear_snapshot()`
  const rows = await admin<{ relname: string; scans: string; rows: string }[]>`
    select relname, seq_scan::text as scans, (seq_tup_read + coalesce(idx_tup_fetch, 0))::text as rows
    from pg_stat_user_tables where relname in ('owner_keys', 'events', 'plants', 'owner_generations')`
  return Object.fromEntries(
    rows.map((row) => [row.relname, { scans: Number(row.scans), rows: Number(row.rows) }]),
  )
}

test('creates, retries, pages and reads of the log planned on a small store scan no table once it is large', async () => {
  // given: every statement used once on a store of one owner, then 50,000 owners more
  await createPlant(handle.db, ownerKeyCache(handle.keyring), command('first', 1n), 'r1')
  await createPlant(handle.db, ownerKeyCache(handle.keyring), command('first', 1n), 'r1')
  await createBatch('first', [2n, 3n, 4n])
  await listPlants(handle.db, { owner: 'first', limit: 20 })
  await readLog(0n)
  await admin`
    insert into owner_keys (pseudonym, owner, key)
    select md5(i::text), 'other-' || i, decode(repeat(md5(i::text), 4), 'hex') from generate_series(1, 50000) as i`
  await admin`
    insert into plants (owner, id, name, tag, position)
    select 'other-' || i, i, 'plant', null, 1000000 + i from generate_series(1, 50000) as i`
  // Erasures' notices are the events simplest to write by hand: 50,000 of them.
  await admin`
    insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select 'owner:' || md5(i::text), 1, 'OwnerErased', 1, '{}', jsonb_build_object('pseudonym', md5(i::text)), now()
    from generate_series(1, 50000) as i`
  const head = await settleNow(handle.db)
  const before = await tableReads()
  // when
  for (let id = 2n; id <= 21n; id++) {
    await createPlant(handle.db, ownerKeyCache(handle.keyring), command(`owner-${id}`, id), `r${id}`)
    await createPlant(handle.db, ownerKeyCache(handle.keyring), command(`owner-${id}`, id), `r${id}`)
    await createBatch(`batch-${id}`, [id, id + 100n, id + 200n])
    expect((await listPlants(handle.db, { owner: `owner-${id}`, limit: 20 })).kind).toBe('page')
  }
  expect((await readLog(head)).map((event) => event.metadata.owner)).toContain('batch-21')
  // then: no table was scanned, and each create, page or read of the log read a few rows of each (not 50,000)
  const after = await tableReads()
  for (const table of Object.keys(before)) {
    expect({ table, scans: after[table]?.scans }).toEqual({ table, scans: before[table]?.scans })
    expect({ table, read: (after[table]?.rows ?? 0) - (before[table]?.rows ?? 0) < 2000 }).toEqual({
      table,
      read: true,
    })
  }
  // and the statements were the prepared ones, not planned anew
  const prepared = rowsOf<{ statement: string }>(
    await handle.db.execute(sql`select statement from pg_prepared_statements`),
  )
  expect(prepared.some((row) => row.statement.includes('insert into "events"'))).toBe(true)
}, 60_000)
