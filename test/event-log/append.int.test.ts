import { afterAll, beforeAll, expect, test } from 'bun:test'
import { appendEvents, type StreamAppend } from '../../src/event-log/append.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { create, openTestStorage, type TestStorage } from '../support/storage.ts'

// One owner's appends commit in position order (the listing's head and ETag, and a replica's
// read-your-writes, rely on it): a lone append of a known owner waits for the owner's append in
// flight, and takes its position after that one commits.
let storage: TestStorage
beforeAll(async () => {
  storage = await openTestStorage('postgres')
  await create(storage, 'ada', { id: 1n, name: 'Fern' })
  await create(storage, 'bea', { id: 1n, name: 'Moss' })
})
afterAll(() => storage.close())

const append = (owner: string, id: bigint): StreamAppend => ({
  owner,
  plantId: id,
  requestId: `request ${id}`,
  expectedVersion: 0,
  event: {
    type: 'PlantCreated',
    schemaVersion: 1,
    data: { id: id.toString(), name: `plant ${id}`, tag: null },
    recordedAt: new Date(),
  },
})

const settledWithin = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise.then(() => true), Bun.sleep(ms).then(() => false)])

test("a lone append of a known owner waits for the owner's append in flight, and commits after it", async () => {
  // given: an append of ada's, done but not committed
  let commit = () => {}
  const held = new Promise<void>((resolve) => {
    commit = resolve
  })
  let appended = () => {}
  const inFlight = new Promise<void>((resolve) => {
    appended = resolve
  })
  const first = storage.db.transaction(async (tx) => {
    const [outcome] = await appendEvents(tx, ownerKeyCache(storage.keyring), [append('ada', 2n)])
    appended()
    await held
    return outcome
  })
  await inFlight
  // when: another append of ada's, and one of bea's, each alone
  const second = appendEvents(storage.db, ownerKeyCache(storage.keyring), [append('ada', 3n)])
  const other = appendEvents(storage.db, ownerKeyCache(storage.keyring), [append('bea', 3n)])
  // then: bea's goes through, ada's waits until the first commits, and comes after it
  expect(await settledWithin(other, 5_000)).toBe(true)
  expect(await settledWithin(second, 500)).toBe(false)
  commit()
  const [[later], earlier] = await Promise.all([second, first])
  expect(earlier).toHaveProperty('position')
  expect(later).toHaveProperty('position')
  const position = (outcome: unknown) => (outcome as { position: bigint }).position
  expect(position(later) > position(earlier)).toBe(true)
})

test('a lone append under a key an erasure has begun to destroy appends nothing and asks for a new key', async () => {
  // given: ada's key, held by this process, then marked as being erased
  const keys = ownerKeyCache(storage.keyring)
  const [known] = await appendEvents(storage.db, keys, [append('ada', 4n)])
  expect(known).toHaveProperty('position')
  await storage.db.execute(`update owner_keys set erasing = true where owner = 'ada'`)
  // when
  const [outcome] = await appendEvents(storage.db, keys, [append('ada', 5n)])
  // then
  expect(outcome).toBe('rekey')
})
