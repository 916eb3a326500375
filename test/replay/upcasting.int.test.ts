import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rebuildProjection } from '../../src/replay/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/replay/verify-projection.ts'
import { readStream } from '../../src/store/event-store.ts'
import { create, listing, openTestStorage, STORAGE_KINDS, type TestStorage } from './storage.ts'

// Events as an older version of the service wrote them: PlantCreated v0 named the id `plantId`
// and stored it as a JSON number, called the name `title`, and left an absent tag out.
const V0_FIXTURE = sql`
  insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at) values
  ('plant:9007199254740993:olivia', 1, 'PlantCreated', 0, '{"plantId": 9007199254740993, "title": "Old fern"}',
   '{"owner": "olivia", "requestId": "legacy-1"}', '2020-01-01T00:00:00.123456Z'),
  ('plant:2:olivia', 1, 'PlantCreated', 0, '{"plantId": 2, "title": "Old palm", "tag": ""}',
   '{"owner": "olivia", "requestId": "legacy-2"}', '2020-01-02T00:00:00Z')`

for (const kind of STORAGE_KINDS) {
  describe(`upcasting on ${kind}`, () => {
    let storage: TestStorage
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      await storage.db.execute(V0_FIXTURE)
      await create(storage.db, 'olivia', { id: 3n, name: 'New cactus', tag: 'v1' })
    })
    afterAll(() => storage.close())

    test('v0 events replay into the current projection beside v1 events, in log order', async () => {
      // when
      await rebuildProjection(storage.db)
      // then
      expect(await listing(storage.db, 'olivia')).toEqual([
        { name: 'Old fern' },
        { name: 'Old palm', tag: '' },
        { name: 'New cactus', tag: 'v1' },
      ])
      expect(isInSync((await verifyProjection(storage.db)).diff)).toBe(true)
    })

    test('a stream read gives a v0 event in the current shape, the id exact, an empty tag kept', async () => {
      const [fern] = await readStream(storage.db, 'plant:9007199254740993:olivia')
      const [palm] = await readStream(storage.db, 'plant:2:olivia')
      expect([fern?.schemaVersion, fern?.data]).toEqual([
        0,
        { id: '9007199254740993', name: 'Old fern', tag: null },
      ])
      expect(palm?.data).toEqual({ id: '2', name: 'Old palm', tag: '' })
    })

    test('an upcast plant behaves like any other: a retry is unchanged, a different name conflicts', async () => {
      const retry = await create(storage.db, 'olivia', { id: 9007199254740993n, name: 'Old fern' })
      const changed = await create(storage.db, 'olivia', { id: 9007199254740993n, name: 'Fern' })
      expect([retry.outcome, changed.outcome]).toEqual(['unchanged', 'conflict'])
    })
  })
}

// A shape the definition does not know is refused wherever the log is read, naming the event.
for (const kind of STORAGE_KINDS) {
  describe(`events the code cannot read, on ${kind}`, () => {
    let storage: TestStorage
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      await storage.db.execute(sql`
        insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at) values
        ('plant:7:olivia', 1, 'PlantCreated', 2, '{"id": "7", "name": "Future"}', '{"owner": "olivia", "requestId": "r"}', now()),
        ('plant:8:olivia', 1, 'PlantCreated', 0, '{"plantId": 1.5, "title": "Half"}', '{"owner": "olivia", "requestId": "r"}', now())`)
    })
    afterAll(() => storage.close())

    const causeOf = (error: unknown) => String((error as { cause?: unknown }).cause ?? error)

    test('a version newer than the definition knows stops a stream read with its position', async () => {
      const refusal = await readStream(storage.db, 'plant:7:olivia').catch(causeOf)
      expect(refusal).toMatch(/unknown event PlantCreated v2 at position \d+/)
    })

    test('a v0 id that is not an integer is refused, not rounded', async () => {
      const refusal = await readStream(storage.db, 'plant:8:olivia').catch(causeOf)
      expect(refusal).toContain('invalid input syntax for type bigint: "1.5"')
    })
  })
}
