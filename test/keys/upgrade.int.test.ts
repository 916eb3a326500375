import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { type Database, type DatabaseHandle, rowsOf } from '../../src/database/database.ts'
import { eraseOwner } from '../../src/erasure/erase-owner.ts'
import type { UpgradeProgress } from '../../src/keys/fenced-rewrite.ts'
import { upgradeLog } from '../../src/keys/log-upgrade.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { count, create, listing } from '../support/storage.ts'
import {
  createLegacyStore,
  type LegacyStore,
  loadLegacyLog,
  type StorageKind,
} from './upgrade-legacy-store.ts'
import {
  eventRowsText,
  eventStatisticsText,
  FILE_SAMPLES,
  inTableFiles,
  type LegacyFacts,
  readLegacyFacts,
  secretsIn,
} from './upgrade-secrets.ts'

const KINDS: StorageKind[] = ['postgres', 'embedded']

// The database's refusal of `statement` (drizzle wraps it); fails when the statement succeeds.
async function refusal(db: Database, statement: SQL): Promise<string> {
  try {
    await db.execute(statement)
  } catch (error) {
    return String((error as { cause?: unknown }).cause ?? error)
  }
  throw new Error('the statement was not refused')
}

// The upgrade of a log written by the previous version (docs/erasure.md, src/keys/log-upgrade.ts),
// on its own fixture (test/erasure/fixtures/README.md): several owners, int64 extremes, 1,024-code-point names
// and tags, null and empty tags, PlantCreated v0.
for (const kind of KINDS) {
  describe(`a log of the previous version opened by this one, on ${kind}`, () => {
    let legacy: LegacyStore
    let facts: LegacyFacts
    let before: { rows: string[]; statistics: string[]; files: string[] }
    let storage: DatabaseHandle
    const progress: UpgradeProgress[] = []

    beforeAll(async () => {
      legacy = await createLegacyStore(kind, async (db) => {
        await loadLegacyLog(db)
        await db.execute(sql`analyze events`)
        facts = await readLegacyFacts(db)
        before = {
          rows: await eventRowsText(db),
          statistics: await eventStatisticsText(db),
          files: await inTableFiles(db, FILE_SAMPLES),
        }
      })
      storage = await openStorage(legacy.storage, { batchSize: 4, onProgress: (step) => progress.push(step) })
    })
    afterAll(async () => {
      await storage?.close()
      await legacy?.cleanup()
    })

    test('the search finds the fixture in the previous version’s rows and statistics', () => {
      expect(facts.owners.length).toBe(4)
      expect(secretsIn(before.rows, facts.secrets).length).toBe(facts.secrets.length)
      expect(secretsIn(before.statistics, facts.secrets)).toContain('olivia')
      expect(before.files).toEqual(FILE_SAMPLES)
    })

    test('the upgrade seals every event in batches, reporting its progress, then rewrites the table', () => {
      expect(progress.filter((step) => step.step === 'seal').map((step) => step.sealed)).toEqual([
        4, 8, 12, 13,
      ])
      expect(progress.slice(-4).map((step) => step.step)).toEqual(['vacuum', 'analyze', 'validate', 'done'])
      expect(progress.at(-1)).toMatchObject({ sealed: 13, total: 13 })
    })

    test('no row of the events table, nor its statistics, holds a subject, name, tag, id or request id', async () => {
      expect(secretsIn(await eventRowsText(storage.db), facts.secrets)).toEqual([])
      expect(secretsIn(await eventStatisticsText(storage.db), facts.secrets)).toEqual([])
    })

    test('nor do the table’s files: no old row version is left in them', async () => {
      expect(await inTableFiles(storage.db, FILE_SAMPLES)).toEqual([])
    })

    test('the events keep their count and positions, and every one is in the erasable form', async () => {
      const rows = rowsOf<{ position: string; erasable: boolean }>(
        await storage.db.execute(sql`select position::text as position,
          metadata ? 'pseudonym' and metadata ? 'gcm' and data ? 'gcm' and stream_id ~ '^plant:[0-9a-f]{64}$' as erasable
          from events order by position`),
      )
      expect(rows.map((row) => row.position)).toEqual(facts.positions)
      expect(rows.every((row) => row.erasable)).toBe(true)
    })

    test('every owner’s listing is unchanged, the projection verifies, and a rebuild lists the same', async () => {
      for (const owner of facts.owners)
        expect(await listing(storage.db, owner)).toEqual(facts.listings.get(owner) ?? [])
      expect(isInSync((await verifyProjection(storage.db, storage.keyring)).diff)).toBe(true)
      await rebuildProjection(storage.db, storage.keyring)
      for (const owner of facts.owners)
        expect(await listing(storage.db, owner)).toEqual(facts.listings.get(owner) ?? [])
    })

    test('the constraint is validated, and the events table still refuses UPDATE, DELETE and TRUNCATE', async () => {
      const [constraint] = rowsOf<{ validated: boolean }>(
        await storage.db.execute(
          sql`select convalidated as validated from pg_constraint where conname = 'events_erasable'`,
        ),
      )
      expect(constraint?.validated).toBe(true)
      for (const change of [
        sql`update events set type = type`,
        sql`delete from events`,
        sql`truncate events`,
      ]) {
        expect(await refusal(storage.db, change)).toContain('append-only')
      }
      expect(await count(storage.db, 'events')).toBe(facts.positions.length)
    })

    test('an insert in the previous version’s form is refused', async () => {
      const insert = await refusal(
        storage.db,
        sql`
        insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
        values ('plant:77:olivia', 1, 'PlantCreated', 1, '{"id": "77", "name": "Late", "tag": null}',
                '{"owner": "olivia", "requestId": "late"}', now())`,
      )
      expect(insert).toContain('violates check constraint "events_erasable"')
      expect(await count(storage.db, 'events')).toBe(facts.positions.length)
    })

    test('creates answer as before: a retry of a fixture plant is unchanged, another name conflicts', async () => {
      const retries = [
        await create(storage, 'olivia', {
          id: 9223372036854775807n,
          name: 'Maximum monstera',
          tag: 'windowsill-east',
        }),
        await create(storage, 'olivia', { id: 9007199254740993n, name: 'Oldest fern' }),
        await create(storage, 'noah', { id: 9223372036854775807n, name: 'Noah’s other ficus' }),
        await create(storage, 'olivia', { id: 2222222222222n, name: 'Oldest palm', tag: 'x' }),
      ]
      expect(retries.map((result) => result.outcome)).toEqual([
        'unchanged',
        'unchanged',
        'conflict',
        'conflict',
      ])
      const created = await create(storage, 'olivia', { id: 31n, name: 'After the upgrade' })
      expect(created.outcome).toBe('created')
      expect(await listing(storage.db, 'olivia')).toEqual([
        ...(facts.listings.get('olivia') ?? []),
        { name: 'After the upgrade' },
      ])
    })

    test('a second open finds the log upgraded and does nothing', async () => {
      const again: UpgradeProgress[] = []
      expect(await upgradeLog(storage.db, storage.keyring, { onProgress: (step) => again.push(step) })).toBe(
        false,
      )
      expect(again).toEqual([])
    })

    test('an owner of the fixture can be erased', async () => {
      const noah = facts.listings.get('noah') ?? []
      expect((await eraseOwner(storage.db, 'noah')).plants).toBe(noah.length)
      expect(await listing(storage.db, 'noah')).toEqual([])
      expect(await listing(storage.db, 'olivia')).toHaveLength(
        (facts.listings.get('olivia') ?? []).length + 1,
      )
      expect(isInSync((await verifyProjection(storage.db, storage.keyring)).diff)).toBe(true)
    })
  })
}
