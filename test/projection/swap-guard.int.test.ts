import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { create, listing, openTestStorage, type TestStorage } from '../support/storage.ts'

// The swap's second guard, for the case its fence should ever fail: an erasure's first step that
// slipped in after a rebuild filled its table (done here by hand, past the lock) is not undone by
// the swap.
describe('a rebuild swapping after an erasure it was not fenced from', () => {
  let storage: TestStorage
  let admin: postgres.Sql
  beforeAll(async () => {
    storage = await openTestStorage('postgres', { label: 'swap_guard' })
    admin = postgres(String(storage.url), { max: 2, onnotice: () => {} })
    for (const id of [1n, 2n]) {
      await create(storage, 'alice', { id, name: `Alice ${id}` })
      await create(storage, 'bob', { id, name: `Bob ${id}` })
    }
  })
  afterAll(async () => {
    await admin?.end()
    await storage?.close()
  })

  test("given a rebuild held at its swap with Alice's rows in its table, when her erasure's first step commits past the lock, then the swap installs none of them, and Bob's all", async () => {
    // given: the events table held, so the rebuild waits for its swap with its table filled
    const holder = await admin.reserve()
    await holder`begin`
    await holder`lock table events in share mode`
    const rebuild = rebuildProjection(storage.db, storage.keyring)
    const deadline = Date.now() + 30_000
    while (
      (await admin`select 1 from pg_locks where relation = 'events'::regclass and not granted`).length === 0
    ) {
      if (Date.now() > deadline) throw new Error('the swap never waited')
      await Bun.sleep(20)
    }
    // when: the first step of her erasure, as the erasure writes it, past the lock
    await admin.begin(async (tx) => {
      await tx`delete from plants where owner = 'alice'`
      await tx`update owner_keys set erasing = true where owner = 'alice'`
    })
    await holder`rollback`
    holder.release()
    await rebuild
    // then
    expect(await listing(storage.db, 'alice')).toEqual([])
    expect(await listing(storage.db, 'bob')).toHaveLength(2)
  })
})
