import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { listPlants } from '../../src/plants/listing.ts'
import type { PlantView } from '../../src/plants/schemas.ts'
import { create, openTestStorage, STORAGE_KINDS, type TestStorage } from '../support/storage.ts'

// Text comes back from a listing exactly as it was stored, on both storages.
const TEXTS = [
  'quote " backslash \\ slash /',
  'controls \u0001\u001f \b\f\n\r\t',
  'separators \u2028\u2029 and DEL \u007f',
  'astral 😀 combining é right-to-left שלום',
  '\ufeffleading byte order mark',
]

for (const kind of STORAGE_KINDS) {
  describe(`listing text on ${kind}`, () => {
    let storage: TestStorage
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      for (const [index, text] of TEXTS.entries()) {
        await create(storage, 'eve', { id: BigInt(index), name: text, tag: index % 2 === 0 ? text : null })
      }
    })
    afterAll(() => storage.close())

    test('a page gives back every text exactly, a missing tag left out', async () => {
      // when
      const page = await listPlants(storage.db, { owner: 'eve', limit: 10 })
      // then
      const expected = TEXTS.map((text, index) =>
        index % 2 === 0 ? { name: text, tag: text } : { name: text },
      )
      expect(page.kind === 'page' ? JSON.parse(page.body) : []).toEqual(expected)
      // and written byte for byte as JSON.stringify writes it
      expect(page.kind === 'page' ? page.body : '').toBe(JSON.stringify(expected))
    })

    test('a page that stops early names where the next one starts, and that page the rest', async () => {
      // when
      const first = await listPlants(storage.db, { owner: 'eve', limit: 2 })
      const second = await listPlants(storage.db, { owner: 'eve', limit: 10, from: first.next })
      // then
      expect(first.next).toBeDefined()
      expect(second.next).toBeUndefined()
      const names = [first, second].flatMap((page) =>
        page.kind === 'page' ? (JSON.parse(page.body) as PlantView[]).map((plant) => plant.name) : [],
      )
      expect(names).toEqual(TEXTS)
    })

    test("every page names the owner's head: the first, the last, one of none and one of no rows", async () => {
      // given
      const whole = await listPlants(storage.db, { owner: 'eve' })
      const first = await listPlants(storage.db, { owner: 'eve', limit: 2 })
      // when
      const pages = await Promise.all([
        listPlants(storage.db, { owner: 'eve', limit: 2 }),
        listPlants(storage.db, { owner: 'eve', limit: 10, from: first.next }),
        listPlants(storage.db, { owner: 'eve', limit: 0 }),
        listPlants(storage.db, { owner: 'eve', limit: 10, from: whole.position + 1n }),
      ])
      // then
      expect(whole.position > 0n).toBe(true)
      expect(pages.map((page) => page.position)).toEqual(pages.map(() => whole.position))
      expect(pages.map((page) => (page.kind === 'page' ? JSON.parse(page.body).length : -1))).toEqual([
        2,
        TEXTS.length - 2,
        0,
        0,
      ])
      // and an owner with no plants is at 0
      expect((await listPlants(storage.db, { owner: 'nobody', limit: 10 })).position).toBe(0n)
    })
  })
}
