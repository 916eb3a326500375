import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { seal, streamIdOf } from '../../src/crypto/sealing.ts'
import type { DatabaseHandle } from '../../src/database/database.ts'
import { readPlantStream } from '../../src/event-log/append.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { createLegacyStore, type LegacyStore, openAsIs } from '../keys/upgrade-legacy-store.ts'
import {
  count,
  create,
  listing,
  openTestStorage,
  STORAGE_KINDS,
  type TestStorage,
} from '../support/storage.ts'

// Events as an older version of the service wrote them: PlantCreated v0 named the id `plantId`
// and stored it as a JSON number, called the name `title`, and left an absent tag out. Only a
// version before erasure wrote them, in plaintext: they reach this one through the log's upgrade
// (src/keys/log-upgrade.ts), which seals them as stored, v0 inside.
const V0_FIXTURE = sql`
  insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at) values
  ('plant:9007199254740993:olivia', 1, 'PlantCreated', 0, '{"plantId": 9007199254740993, "title": "Old fern"}',
   '{"owner": "olivia", "requestId": "legacy-1"}', '2020-01-01T00:00:00.123456Z'),
  ('plant:2:olivia', 1, 'PlantCreated', 0, '{"plantId": 2, "title": "Old palm", "tag": ""}',
   '{"owner": "olivia", "requestId": "legacy-2"}', '2020-01-02T00:00:00Z')`

for (const kind of STORAGE_KINDS) {
  describe(`upcasting on ${kind}`, () => {
    let legacy: LegacyStore
    let storage: DatabaseHandle
    beforeAll(async () => {
      legacy = await createLegacyStore(kind, async (db) => {
        await db.execute(V0_FIXTURE)
      })
      storage = await openStorage(legacy.storage)
      await create(storage, 'olivia', { id: 3n, name: 'New cactus', tag: 'v1' })
    })
    afterAll(async () => {
      await storage?.close()
      await legacy?.cleanup()
    })

    test('v0 events replay into the current projection beside v1 events, in log order', async () => {
      // when
      await rebuildProjection(storage.db, storage.keyring)
      // then
      expect(await listing(storage.db, 'olivia')).toEqual([
        { name: 'Old fern' },
        { name: 'Old palm', tag: '' },
        { name: 'New cactus', tag: 'v1' },
      ])
      expect(isInSync((await verifyProjection(storage.db, storage.keyring)).diff)).toBe(true)
    })

    test('a stream read gives a v0 event in the current shape, the id exact, an empty tag kept', async () => {
      const [fern] = await readPlantStream(
        storage.db,
        storage.keyring,
        await keyOf(storage, 'olivia'),
        9007199254740993n,
      )
      const [palm] = await readPlantStream(storage.db, storage.keyring, await keyOf(storage, 'olivia'), 2n)
      expect([fern?.schemaVersion, fern?.data]).toEqual([
        0,
        { id: '9007199254740993', name: 'Old fern', tag: null },
      ])
      expect(palm?.data).toEqual({ id: '2', name: 'Old palm', tag: '' })
    })

    test('an upcast plant behaves like any other: a retry is unchanged, a different name conflicts', async () => {
      const retry = await create(storage, 'olivia', { id: 9007199254740993n, name: 'Old fern' })
      const changed = await create(storage, 'olivia', { id: 9007199254740993n, name: 'Fern' })
      expect([retry.outcome, changed.outcome]).toEqual(['unchanged', 'conflict'])
    })
  })
}

const causeOf = (error: unknown) => String((error as { cause?: unknown }).cause ?? error)

// A shape the definition does not know is refused wherever the log is read, naming the event.
for (const kind of STORAGE_KINDS) {
  describe(`events the code cannot read, on ${kind}`, () => {
    let storage: TestStorage
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      // sealed under olivia's key, as this version stores every event
      const { pseudonym, wrapped, ...made } = storage.keyring.make()
      // Used after the insert: a copy of our own, the keyring's being zeroed once idle.
      const raw = new Uint8Array(made.raw)
      await storage.db.execute(
        sql`insert into owner_keys (pseudonym, owner, key) values (${pseudonym}, 'olivia', ${wrapped})`,
      )
      for (const [id, version, data] of [
        ['7', 2, '{"id": "7", "name": "Future"}'],
        ['8', 0, '{"plantId": 1.5, "title": "Half"}'],
      ] as const) {
        await storage.db.execute(sql`
          insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
          values (${streamIdOf(id, raw)}, 1, 'PlantCreated', ${version}, ${JSON.stringify(seal(data, raw, 'data', { streamId: streamIdOf(id, raw), streamVersion: 1 }))}::jsonb,
                  ${JSON.stringify({ pseudonym })}::jsonb, now())`)
      }
    })
    afterAll(() => storage.close())
    // Why a read of Olivia's plant `plantId` stops.
    const refusalOfOliviaPlant = async (plantId: bigint) => {
      const key = await keyOf(storage, 'olivia')
      return readPlantStream(storage.db, storage.keyring, key, plantId).catch(causeOf)
    }

    test('a version newer than the definition knows stops a stream read with its position', async () => {
      const refusal = await refusalOfOliviaPlant(7n)
      expect(refusal).toMatch(/event PlantCreated v2 at position \d+: unknown schema version 2/)
    })

    test('a v0 id that is not an integer is refused, not rounded', async () => {
      const refusal = await refusalOfOliviaPlant(8n)
      expect(refusal).toMatch(/malformed event PlantCreated v0 at position \d+/)
    })
  })
}

// The log's upgrade reads every plaintext event by the same definition: one it cannot read stops
// it, naming the event, and the open fails with the log as it was.
for (const kind of STORAGE_KINDS) {
  test(`a plaintext event the code cannot read stops the upgrade, on ${kind}`, async () => {
    const legacy = await createLegacyStore(kind, async (db) => {
      await db.execute(V0_FIXTURE)
      await db.execute(sql`
        insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at) values
        ('plant:7:olivia', 1, 'PlantCreated', 2, '{"id": "7", "name": "Future"}', '{"owner": "olivia", "requestId": "r"}', now())`)
    })
    try {
      const refusal = await openStorage(legacy.storage).then(async (opened) => {
        await opened.close()
        return 'opened'
      }, causeOf)
      expect(refusal).toMatch(/event PlantCreated v2 at position 3: unknown schema version 2/)
      // and nothing was sealed: the batch is one transaction
      const asIs = await openAsIs(legacy)
      try {
        expect(await count(asIs.db, "events where not (metadata ? 'pseudonym')")).toBe(3)
      } finally {
        await asIs.close()
      }
    } finally {
      await legacy.cleanup()
    }
  })
}

async function keyOf(storage: { db: TestStorage['db']; keyring: TestStorage['keyring'] }, owner: string) {
  const key = (await ownerKeyCache(storage.keyring).find(storage.db, [owner])).get(owner)
  // A key made now would be one the owner does not have.
  if (!key || key.made) throw new Error(`${owner} has no live key`)
  return key
}
