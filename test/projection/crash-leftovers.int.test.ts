import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { Database } from '../../src/database/database.ts'
import { claimWorkTable, clearDeadWorkTables } from '../../src/locks/work-tables.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { importEvents, readLines } from '../../src/transfer/import-events.ts'
import {
  appendAround,
  create,
  openTestStorage,
  rowsOf,
  STORAGE_KINDS,
  type TestStorage,
} from '../support/storage.ts'

// What a rebuild or an import killed half-way leaves: its work table, with nobody holding it.
async function leaveDeadTables(db: Database, suffix: string) {
  await db.execute(sql.raw(`create table plants_rebuild_dead${suffix} (like plants including defaults)`))
  await db.execute(sql.raw(`create unlogged table import_staging_dead${suffix} (line int)`))
}

async function workTables(db: Database): Promise<string[]> {
  const rows = await rowsOf(
    db,
    `select relname from pg_class where relkind = 'r'
       and (relname like 'plants\\_rebuild\\_%' or relname like 'import\\_staging\\_%') order by relname`,
  )
  return rows.map((row) => String(row.relname))
}

async function* text(lines: string) {
  yield lines
}

for (const kind of STORAGE_KINDS) {
  describe(`after a crash on ${kind}`, () => {
    let storage: TestStorage
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      await create(storage, 'ada', { id: 1n, name: 'Fern' })
    })
    afterAll(() => storage.close())

    test('the next rebuild drops the tables of runs that died, and leaves none of its own', async () => {
      await leaveDeadTables(storage.db, 'a')
      expect(await workTables(storage.db)).toEqual(['import_staging_deada', 'plants_rebuild_deada'])
      await rebuildProjection(storage.db, storage.keyring)
      expect(await workTables(storage.db)).toEqual([])
    })

    test('a table whose run is alive is left alone: two rebuilds may run at once', async () => {
      const claim = await claimWorkTable(storage.db, 'plants_rebuild_alive')
      await storage.db.execute(sql.raw('create table plants_rebuild_alive (like plants including defaults)'))
      await rebuildProjection(storage.db, storage.keyring)
      expect(await workTables(storage.db)).toEqual(['plants_rebuild_alive'])
      await claim.release()
      expect((await clearDeadWorkTables(storage.db)).map((table) => table.name)).toEqual([
        'plants_rebuild_alive',
      ])
    })

    test('the next import drops them too, also when it is refused', async () => {
      await leaveDeadTables(storage.db, 'b')
      await expect(
        importEvents(storage.db, storage.keyring, readLines(text('{}\n')), { append: true }),
      ).rejects.toMatchObject({ code: 'IMPORT_REFUSED' })
      expect(await workTables(storage.db)).toEqual([])
    })

    test('a refusal after an interrupted import says to run projection rebuild', async () => {
      // given: events in the log that lack their projected row, as an interrupted run leaves them
      await appendAround(storage, 'ada', { data: { id: '2', name: 'Ivy', tag: null } })
      // when the import is run again
      const refused = importEvents(storage.db, storage.keyring, readLines(text('{}\n')))
      // then
      await expect(refused).rejects.toThrow(
        'the event log is not empty: it holds 2 event(s), up to position 2, and 1 of them lack their projected row',
      )
      await expect(refused).rejects.toThrow('run `bun run cli projection rebuild`')
    })
  })
}
