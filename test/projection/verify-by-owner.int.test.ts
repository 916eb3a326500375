import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createKeyring, type Keyring } from '../../src/crypto/keyring.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { create, openTestStorage, type TestStorage } from '../support/storage.ts'

const OWNERS = 12
const PLANTS_EACH = 5

// A keyring that keeps a single opened key, counting the keys it unwraps: with one key kept, it
// unwraps one each time the owner of the event it opens changes.
function countingKeyring(keks: Keyring['keks']): { keyring: Keyring; unwrapped: () => number } {
  const inner = createKeyring(keks, { capacity: 1 })
  let last: string | undefined
  let unwrapped = 0
  const keyring: Keyring = {
    ...inner,
    open: (stored) => {
      if (stored.pseudonym !== last) unwrapped++
      last = stored.pseudonym
      return inner.open(stored)
    },
  }
  return { keyring, unwrapped: () => unwrapped }
}

describe('projection verify reads by owner', () => {
  let storage: TestStorage
  beforeAll(async () => {
    storage = await openTestStorage('postgres')
    // Creates over time: every owner's plants interleaved with every other's.
    for (let round = 0; round < PLANTS_EACH; round++) {
      for (let owner = 0; owner < OWNERS; owner++) {
        await create(storage, `owner-${owner}`, {
          id: BigInt(round * OWNERS + owner),
          name: `plant ${round}`,
        })
      }
    }
  })
  afterAll(() => storage.close())

  test("each owner's key is unwrapped once, in batches smaller than an owner's events", async () => {
    const { keyring, unwrapped } = countingKeyring(storage.keyring.keks)
    const verified = await verifyProjection(storage.db, keyring, { batchSize: 3 })
    expect(verified.events).toBe(OWNERS * PLANTS_EACH)
    expect(isInSync(verified.diff)).toBe(true)
    expect(unwrapped()).toBe(OWNERS)
  })

  test('a drift in one owner among many is found, the others in step', async () => {
    await storage.db.execute(sql`update plants set name = 'changed' where owner = 'owner-7' and id = 19`)
    await storage.db.execute(sql`delete from plants where owner = 'owner-3' and id = 3`)
    const { diff } = await verifyProjection(storage.db, storage.keyring, { batchSize: 4 })
    expect(diff.changed.count).toBe(1)
    expect(diff.changed.examples[0]?.actual).toMatchObject({ owner: 'owner-7', id: 19n, name: 'changed' })
    expect(diff.missing).toMatchObject({ count: 1, examples: [{ owner: 'owner-3', id: 3n }] })
    expect(diff.extra.count).toBe(0)
  })
})
