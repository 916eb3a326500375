import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { count, openTestStorage, STORAGE_KINDS, type TestStorage } from '../support/storage.ts'
import { createTrickyPlants } from './fixtures.ts'

for (const kind of STORAGE_KINDS) {
  describe(`projection verify on ${kind}`, () => {
    const opened: TestStorage[] = []
    let storage: TestStorage
    beforeEach(async () => {
      storage = await openTestStorage(kind)
      opened.push(storage)
      await createTrickyPlants(storage)
    })
    afterAll(() => Promise.all(opened.map((each) => each.close())))

    const drift = (statement: string) => storage.db.execute(sql.raw(statement))

    test('a projection kept by the live path matches the fold of the log', async () => {
      const { events, diff } = await verifyProjection(storage.db, storage.keyring)
      expect(events).toBe(6)
      expect(isInSync(diff)).toBe(true)
    })

    test('a row the log has and the projection lacks is reported missing', async () => {
      // given
      await drift(`delete from plants where id = 9007199254740993`)
      // when
      const { diff } = await verifyProjection(storage.db, storage.keyring)
      // then
      expect(isInSync(diff)).toBe(false)
      expect(diff.missing.count).toBe(1)
      expect(diff.missing.examples).toEqual([
        expect.objectContaining({ owner: 'alice', id: 9007199254740993n, name: 'Ficus', tag: null }),
      ])
      expect([diff.extra.count, diff.changed.count]).toEqual([0, 0])
    })

    test('a row no event explains is reported extra', async () => {
      await drift(`insert into plants values ('mallory', 9007199254740995, 'Ghost', null, 999)`)
      const { diff } = await verifyProjection(storage.db, storage.keyring)
      expect(diff.extra).toEqual({
        count: 1,
        examples: [{ owner: 'mallory', id: 9007199254740995n, name: 'Ghost', tag: null, position: 999n }],
      })
      expect([diff.missing.count, diff.changed.count]).toEqual([0, 0])
    })

    test('a changed name, an empty tag that became null, and a moved position are each reported changed', async () => {
      // given
      await drift(`update plants set name = 'Ficus!' where id = 9007199254740993`)
      await drift(`update plants set tag = null where id = 9223372036854775807`)
      await drift(`update plants set position = position + 1000 where id = 7`)
      // when
      const { diff } = await verifyProjection(storage.db, storage.keyring)
      // then
      expect(diff.changed.count).toBe(3)
      const pairs = diff.changed.examples.map(({ expected, actual }) => [
        expected.id,
        expected.tag,
        actual.tag,
      ])
      expect(pairs).toContainEqual([9223372036854775807n, '', null])
      expect(diff.changed.examples[0]?.actual.name).toBe('Ficus!')
      expect([diff.missing.count, diff.extra.count]).toEqual([0, 0])
    })

    test('verify changes nothing, and a rebuild brings the projection back in line', async () => {
      // given
      await drift(`delete from plants where id = 8`)
      await drift(`insert into plants values ('mallory', 1, 'Ghost', '', 999)`)
      // when
      await verifyProjection(storage.db, storage.keyring)
      // (the row count alone would not show a repair: one row is missing and one is extra)
      const afterVerify = (await verifyProjection(storage.db, storage.keyring)).diff
      await rebuildProjection(storage.db, storage.keyring)
      // then the first verify left the drift where it was, and the rebuild removed it
      expect([afterVerify.missing.count, afterVerify.extra.count]).toEqual([1, 1])
      expect(await count(storage.db, 'projection_checkpoints')).toBe(1)
      expect(isInSync((await verifyProjection(storage.db, storage.keyring)).diff)).toBe(true)
    })
  })
}
