import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { projectionStatus } from '../../src/projection/projection-status.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { describeEachStorage } from '../support/each-storage.ts'
import { appendAround, count, create, listing, rowsOf } from '../support/storage.ts'
import { createTrickyPlants, listingsByOwner, TRICKY_PLANT_COUNT } from './fixtures.ts'

const INDEXES = `select indexname, indexdef from pg_indexes where tablename = 'plants' order by indexname`
const CONSTRAINTS = `select conname, contype from pg_constraint where conrelid = 'plants'::regclass order by conname`

describeEachStorage(
  (kind) => `projection rebuild on ${kind}`,
  async (storage) => {
    await createTrickyPlants(storage)
  },
  (storage) => {
    test('every value survives a rebuild exactly, and the table keeps the names the migrations gave it', async () => {
      // given
      const { db } = storage()
      const listings = await listingsByOwner(db)
      const shape = [await rowsOf(db, INDEXES), await rowsOf(db, CONSTRAINTS)]
      // when
      const result = await rebuildProjection(db, storage().keyring, { batchSize: 2 })
      // then
      expect(result).toMatchObject({ events: TRICKY_PLANT_COUNT, plants: TRICKY_PLANT_COUNT, swapped: true })
      expect(await listingsByOwner(db)).toEqual(listings)
      expect(listings.alice).toEqual([
        { name: 'Ficus' },
        { name: 'Ficus twin' },
        { name: 'Max', tag: '' },
        { name: 'Min', tag: 'edge' },
      ])
      expect([await rowsOf(db, INDEXES), await rowsOf(db, CONSTRAINTS)]).toEqual(shape)
      expect(isInSync((await verifyProjection(db, storage().keyring)).diff)).toBe(true)
    })

    test('after a rebuild a retry is still accepted unchanged and a changed body is still a conflict', async () => {
      // given
      await rebuildProjection(storage().db, storage().keyring)
      // when
      const retry = await create(storage(), 'alice', { id: 9007199254740993n, name: 'Ficus' })
      const changed = await create(storage(), 'alice', { id: 9007199254740993n, name: 'Ficus', tag: '' })
      // then
      expect(retry.outcome).toBe('unchanged')
      expect(changed.outcome).toBe('conflict')
      expect(await count(storage().db, 'events')).toBe(TRICKY_PLANT_COUNT)
    })

    test('the checkpoint stands at the head after a rebuild; live writes are projected, not behind', async () => {
      // given
      await rebuildProjection(storage().db, storage().keyring)
      const afterRebuild = await projectionStatus(storage().db)
      // when
      await create(storage(), 'carol', { id: 1n, name: 'New' })
      // then
      expect(afterRebuild).toMatchObject({ events: TRICKY_PLANT_COUNT, sinceCheckpoint: 0, behind: 0 })
      expect(afterRebuild.checkpoint).toBe(afterRebuild.head)
      const afterWrite = await projectionStatus(storage().db)
      expect(afterWrite).toMatchObject({ events: TRICKY_PLANT_COUNT + 1, sinceCheckpoint: 1, behind: 0 })
      expect(afterWrite.checkpoint).toBe(afterRebuild.head)
      expect(await count(storage().db, 'projection_checkpoints')).toBe(1)
    })

    test('an event written around the projection counts as behind until a rebuild folds it in', async () => {
      // given: an event appended without its row, as an import does
      await appendAround(storage(), 'dave', { data: { id: '5', name: 'Side door', tag: null } })
      // when
      const before = await projectionStatus(storage().db)
      await rebuildProjection(storage().db, storage().keyring)
      const after = await projectionStatus(storage().db)
      // then
      expect(before.behind).toBe(1)
      expect(after).toMatchObject({ sinceCheckpoint: 0, behind: 0 })
      expect(await listing(storage().db, 'dave')).toEqual([{ name: 'Side door' }])
    })

    test('a dry run reports the drift a rebuild would fix and changes nothing', async () => {
      // given
      const { db } = storage()
      await db.execute(sql.raw(`delete from plants where name = 'Max'`))
      const before = await count(db, 'plants')
      // when
      const result = await rebuildProjection(db, storage().keyring, { dryRun: true })
      // then
      expect(result.swapped).toBe(false)
      expect(result.diff?.missing.count).toBe(1)
      expect(result.diff?.missing.examples[0]).toMatchObject({ owner: 'alice', name: 'Max', tag: '' })
      expect(await count(db, 'plants')).toBe(before)
      expect(
        await rowsOf(db, `select tablename from pg_tables where tablename like 'plants_rebuild%'`),
      ).toEqual([])
      // and a real rebuild repairs it
      await rebuildProjection(db, storage().keyring)
      expect(await count(db, 'plants')).toBe(before + 1)
    })

    test('an event of an unknown type stops the rebuild, which then changes nothing', async () => {
      // given
      const plantsBefore = await count(storage().db, 'plants')
      await appendAround(storage(), 'dave', { type: 'PlantWatered', data: {} })
      // when
      const refusal = await rebuildProjection(storage().db, storage().keyring).catch(
        (error: unknown) => error,
      )
      // then: the event is named, as the service opened it
      expect(String(refusal)).toMatch(/unknown event PlantWatered v1 at position \d+/)
      expect(await count(storage().db, 'plants')).toBe(plantsBefore)
      expect(
        await rowsOf(storage().db, `select tablename from pg_tables where tablename like 'plants_rebuild%'`),
      ).toEqual([])
    })
  },
)
