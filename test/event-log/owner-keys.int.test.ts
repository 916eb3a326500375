import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eraseOwner } from '../../src/erasure/erase-owner.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { createPlant } from '../../src/plants/create-plant.ts'
import { listing, openTestStorage, rowsOf, type TestStorage } from '../support/storage.ts'

const command = (owner: string, id: bigint, name: string) => ({
  type: 'CreatePlant' as const,
  owner,
  plant: { id, name, tag: null },
  now: new Date('2026-01-02T03:04:05.678Z'),
})

const keysOf = (storage: TestStorage, owner: string) =>
  rowsOf(storage.db, `select pseudonym, erasing from owner_keys where owner = '${owner}' order by erasing`)

describe("owners' keys held by the service", () => {
  let storage: TestStorage
  beforeAll(async () => {
    storage = await openTestStorage('postgres', { label: 'owner_keys' })
  })
  afterAll(() => storage.close())

  test('given a key this process holds, when the owner is erased elsewhere, then the next create is sealed under a new key, never the erased one', async () => {
    // given: ada's key, kept by this process's cache
    const keys = ownerKeyCache(storage.keyring)
    await createPlant(storage.db, keys, command('ada', 1n, 'Fern'), 'r1')
    const [before] = await keysOf(storage, 'ada')
    // when: another process erases her, then this one creates for the same subject
    await eraseOwner(storage.db, 'ada')
    const created = await createPlant(storage.db, keys, command('ada', 1n, 'Palm'), 'r2')
    // then: a new owner with no past
    expect(created.outcome).toBe('created')
    const after = await keysOf(storage, 'ada')
    expect(after).toHaveLength(1)
    expect(after[0]?.pseudonym).not.toBe(before?.pseudonym)
    expect(await listing(storage.db, 'ada')).toEqual([{ name: 'Palm' }])
    const [{ events } = { events: -1 }] = await rowsOf(
      storage.db,
      `select count(*)::int as events from events where metadata->>'pseudonym' = '${before?.pseudonym}'`,
    )
    // the erased key's events: her first plant and the erasure's notice, nothing written since
    expect(events).toBe(2)
  })

  test('given two processes that each make a new owner key at once, then one key is stored and both creates land under it', async () => {
    // given: two caches, as two instances, neither knowing bo
    const first = ownerKeyCache(storage.keyring)
    const second = ownerKeyCache(storage.keyring)
    // when
    const answers = await Promise.all([
      createPlant(storage.db, first, command('bo', 1n, 'Ivy'), 'r3'),
      createPlant(storage.db, second, command('bo', 2n, 'Moss'), 'r4'),
    ])
    // then
    expect(answers.map((answer) => answer.outcome)).toEqual(['created', 'created'])
    expect(await keysOf(storage, 'bo')).toHaveLength(1)
    expect(await listing(storage.db, 'bo')).toHaveLength(2)
  })
})
