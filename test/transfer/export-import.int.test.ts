import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { importEvents, readLines } from '../../src/transfer/import-events.ts'
import {
  appendSealedText,
  createTrickyPlants,
  listingsByOwner,
  openedTexts,
  TRICKY_PLANT_COUNT,
  TRICKY_PLANTS,
} from '../projection/fixtures.ts'
import {
  count,
  create,
  type KeyedStore,
  listing,
  openTestStorage,
  rowsOf,
  type TestStorage,
} from '../support/storage.ts'
import { withRawKeys } from '../support/test-keys.ts'
import { exportText } from './export-text.ts'
import { openRoundTrip, ROUND_TRIPS } from './round-trips.ts'

// Chunks cut at awkward places (inside a line, inside a multi-byte character) as a pipe may.
async function* chunked(text: string) {
  const bytes = new TextEncoder().encode(text)
  for (let at = 0; at < bytes.length; at += 7) yield bytes.slice(at, at + 7)
}

async function importText({ db, keyring }: KeyedStore, text: string, append = false) {
  const imported = await importEvents(db, keyring, readLines(chunked(text)), { append, batchSize: 4 })
  await rebuildProjection(db, keyring)
  return imported
}

for (const [from, to] of ROUND_TRIPS) {
  describe(`export from ${from}, import into ${to}`, () => {
    let source: TestStorage
    let target: TestStorage
    beforeAll(async () => {
      ;[source, target] = await openRoundTrip(from, to)
      await createTrickyPlants(source)
      // A PlantCreated v0, sealed as the upgrade of a log of the previous version seals it.
      await appendSealedText(source, 'olivia', {
        plantId: '1234567890123456789',
        schemaVersion: 0,
        data: '{"title": "v0", "plantId": 1234567890123456789}',
        recordedAt: '2020-01-01T00:00:00.123Z',
      })
    })
    afterAll(() => Promise.all([source.close(), target.close()]))

    test('the log arrives unchanged, positions included, and every owner lists the same plants', async () => {
      // given
      const exported = await exportText(source.db)
      // when
      const imported = await importText(target, exported)
      // then
      expect(imported).toBe(TRICKY_PLANT_COUNT + 1)
      expect(withRawKeys(await exportText(target.db))).toBe(withRawKeys(exported))
      expect(await listingsByOwner(target.db)).toEqual(await listingsByOwner(source.db))
      expect(await openedTexts(target, 0)).toEqual(['{"title": "v0", "plantId": 1234567890123456789}'])
      expect(await listing(target.db, 'olivia')).toEqual([{ name: 'v0' }])
    })

    test('new appends after an import take positions above the imported ones', async () => {
      const decision = await create(target, 'alice', { id: 1n, name: 'After import' })
      const [row] = await rowsOf(target.db, `select max(position)::int as top from events`)
      expect(decision.outcome).toBe('created')
      expect(Number(row?.top)).toBe(TRICKY_PLANT_COUNT + 2)
    })

    // The source's export imported into the target once more.
    const importSourceAgain = async (options: { append?: boolean }) =>
      importEvents(target.db, target.keyring, readLines(chunked(await exportText(source.db))), options)

    test('a non-empty store is refused and nothing is imported', async () => {
      const before = await count(target.db, 'events')
      const refused = importSourceAgain({})
      await expect(refused).rejects.toMatchObject({ code: 'IMPORT_REFUSED' })
      expect(await count(target.db, 'events')).toBe(before)
    })

    test('--append of the same export is refused whole: its owners are in the store already', async () => {
      const before = await count(target.db, 'events')
      const refused = importSourceAgain({ append: true })
      await expect(refused).rejects.toThrow(
        /^line 2: owner ".*" is an owner the target store already has: two keys for one sub would collide in plants$/,
      )
      expect(await count(target.db, 'events')).toBe(before)
    })

    test('--append of new streams places them after the head, in exported order', async () => {
      // given
      const other = await openTestStorage(from)
      await create(other, 'zoe', { id: 1n, name: 'First' })
      await create(other, 'zoe', { id: 2n, name: 'Second', tag: '' })
      const exported = await exportText(other.db)
      await other.close()
      // when
      await importText(target, exported, true)
      // then
      expect(await listingsByOwner(target.db)).toEqual(await listingsByOwner(source.db).then(withAfterImport))
      const zoe = await rowsOf(target.db, `select name from plants where owner = 'zoe' order by position`)
      expect(zoe.map((row) => row.name)).toEqual(['First', 'Second'])
    })

    test('a malformed line is refused with its line number', async () => {
      const refused = importEvents(
        target.db,
        target.keyring,
        readLines(chunked('\n{"position": "1", "streamId": "s"}\n')),
        {
          append: true,
        },
      )
      await expect(refused).rejects.toThrow('line 2: /streamVersion')
    })

    test('--after exports only the events past a position, after the header and every key', async () => {
      const lines = (await exportText(source.db, 2n)).trim().split('\n')
      const owners = Object.keys(TRICKY_PLANTS).length + 1
      expect(lines[0]).toBe('{"format":"plant-store-events","version":3}')
      expect(lines.slice(1, 1 + owners).every((line) => line.startsWith('{"key":'))).toBe(true)
      const events = lines.slice(1 + owners)
      expect(events.length).toBe(TRICKY_PLANT_COUNT + 1 - 2)
      expect(events[0]).toStartWith('{"position":"3",')
    })
  })
}

function withAfterImport(listings: Record<string, unknown>) {
  const alice = listings.alice as unknown[]
  return { ...listings, alice: [...alice, { name: 'After import' }] }
}
