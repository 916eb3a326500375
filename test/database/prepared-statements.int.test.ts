import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rowsOf } from '../../src/database/database.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { createPlant } from '../../src/plants/create-plant.ts'
import { listPlants } from '../../src/plants/listing.ts'
import { openTestStorage, type TestStorage } from '../support/storage.ts'

// The hot statements are named through Drizzle's public `.prepare(name)`, which is what makes
// postgres.js prepare them (parse once per connection); this fails if that route stops preparing.
let handle: TestStorage
beforeAll(async () => {
  // One connection, so the statements and the look at them share a session.
  handle = await openTestStorage('postgres', { label: 'prepared', poolSize: 1, statementTimeoutMs: 10_000 })
})
afterAll(async () => {
  await handle.close()
})

test('a create, its retry and a page run as statements prepared on the connection, each once', async () => {
  // given
  const command = {
    type: 'CreatePlant' as const,
    owner: 'olivia',
    plant: { id: 1n, name: 'Fern', tag: null },
    now: new Date('2026-01-02T03:04:05.678Z'),
  }
  // when
  await createPlant(handle.db, ownerKeyCache(handle.keyring), command, 'r1')
  await createPlant(handle.db, ownerKeyCache(handle.keyring), command, 'r2')
  const page = await listPlants(handle.db, { owner: 'olivia', limit: 10 })
  // then
  expect(page).toEqual({
    kind: 'page',
    body: '[{"name":"Fern"}]',
    next: undefined,
    position: 1n,
    generation: 0n,
  })
  const prepared = rowsOf<{ statement: string }>(
    await handle.db.execute(sql`select statement from pg_prepared_statements`),
  ).map((row) => row.statement)
  const preparedLike = (text: string) => prepared.filter((statement) => statement.includes(text)).length
  // The first create (a new owner's, which makes the key) and its retry (an owner whose key is
  // stored, alone) each run their own append statement, each prepared once.
  expect(preparedLike('insert into "events"')).toBe(2)
  expect(preparedLike('jsonb_array_elements')).toBe(1)
  expect(preparedLike('where "events"."stream_id" = $1')).toBe(1)
  expect(preparedLike('from "plants" where')).toBe(1)
})
