import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  count,
  create,
  eventsOfOwner,
  listing,
  openTestStorage,
  STORAGE_KINDS,
  type TestStorage,
} from '../support/storage.ts'

// The command handler appends optimistically, as if the plant were new, and reads the stream only
// when that append finds the stream taken. These are the paths that start from such a failure.
for (const kind of STORAGE_KINDS) {
  describe(`creating a plant on ${kind}`, () => {
    let storage: TestStorage
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      await create(storage, 'ada', { id: 1n, name: 'Fern', tag: 'green' })
    })
    afterAll(() => storage.close())

    test("a new plant is appended, sealed under its owner's key, and projected in the same statement", async () => {
      // when
      const decision = await create(storage, 'ada', { id: 2n, name: 'Palm' })
      // then
      expect(decision.outcome).toBe('created')
      const event = (await eventsOfOwner(storage, 'ada')).find(
        ({ position }) => position === decision.position,
      )
      expect(event).toMatchObject({ streamVersion: 1, data: { name: 'Palm' } })
      // and the row holds nothing readable: a keyed hash names the stream, the rest is ciphertext
      // (matched by form: random hex or base64 may spell "ada" by chance)
      const base64 = /^[A-Za-z0-9+/]+={0,2}$/
      expect(event?.streamId).toMatch(/^plant:[0-9a-f]{64}$/)
      expect(JSON.parse(String(event?.storedData))).toEqual({ gcm: expect.stringMatching(base64) })
      expect(JSON.parse(String(event?.storedMetadata))).toEqual({
        pseudonym: expect.stringMatching(/^[0-9a-f]{32}$/),
        gcm: expect.stringMatching(base64),
      })
      expect(await listing(storage.db, 'ada')).toContainEqual({ name: 'Palm' })
    })

    test('a retry of an existing plant is unchanged and appends nothing', async () => {
      // given
      const events = await count(storage.db, 'events')
      // when
      const decision = await create(storage, 'ada', { id: 1n, name: 'Fern', tag: 'green' })
      // then
      expect(decision).toMatchObject({ outcome: 'unchanged', plant: { name: 'Fern', tag: 'green' } })
      expect(await count(storage.db, 'events')).toBe(events)
    })

    test('a different plant under an existing id is a conflict naming what is stored', async () => {
      // given
      const events = await count(storage.db, 'events')
      // when
      const decision = await create(storage, 'ada', { id: 1n, name: 'Fern', tag: null })
      // then
      expect(decision).toMatchObject({ outcome: 'conflict', existing: { name: 'Fern', tag: 'green' } })
      expect(await count(storage.db, 'events')).toBe(events)
      expect(await listing(storage.db, 'ada')).toContainEqual({ name: 'Fern', tag: 'green' })
    })

    test('retries and conflicts racing on an existing stream each get their answer and append nothing', async () => {
      // given
      const events = await count(storage.db, 'events')
      // when
      const decisions = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          create(storage, 'ada', { id: 1n, name: 'Fern', tag: index % 2 === 0 ? 'green' : 'blue' }),
        ),
      )
      // then
      expect(decisions.map((decision) => decision.outcome)).toEqual(
        Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? 'unchanged' : 'conflict')),
      )
      expect(await count(storage.db, 'events')).toBe(events)
      expect(await count(storage.db, 'plants')).toBe(events)
    })

    test('the same id under another owner is another plant', async () => {
      // when
      const decision = await create(storage, 'bea', { id: 1n, name: 'Moss' })
      // then
      expect(decision.outcome).toBe('created')
      expect(await listing(storage.db, 'bea')).toEqual([{ name: 'Moss' }])
    })
  })
}
