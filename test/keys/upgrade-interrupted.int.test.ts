import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { type Database, type DatabaseHandle, rowsOf } from '../../src/database/database.ts'
import type { UpgradeProgress } from '../../src/keys/fenced-rewrite.ts'
import { upgradeLog } from '../../src/keys/log-upgrade.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { createTestDatabase, POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { count, listing } from '../support/storage.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import {
  createLegacyStore,
  type LegacyStore,
  loadLegacyLog,
  openAsIs,
  type StorageKind,
} from './upgrade-legacy-store.ts'
import { FILE_SAMPLES, inTableFiles, type LegacyFacts, readLegacyFacts } from './upgrade-secrets.ts'

const KINDS: StorageKind[] = ['postgres', 'embedded']

// This version's migrations on a legacy store, without the upgrade that an open runs after them.
async function migrateOnly(legacy: LegacyStore): Promise<DatabaseHandle> {
  const handle = await openAsIs(legacy)
  await migratePostgresDatabase(handle.settings.url, undefined, TEST_KEYS)
  return handle
}

async function one<Row>(db: Database, query: SQL): Promise<Row | undefined> {
  return rowsOf<Row>(await db.execute(query))[0]
}

const legacyEvents = (db: Database) =>
  one<{ n: number }>(db, sql`select count(*)::int as n from events where not (metadata ? 'pseudonym')`)
const validated = (db: Database) =>
  one<{ validated: boolean }>(
    db,
    sql`select convalidated as validated from pg_constraint where conname = 'events_erasable'`,
  )
for (const kind of KINDS) {
  describe(`an upgrade stopped after some batches, on ${kind}`, () => {
    let legacy: LegacyStore
    let facts: LegacyFacts
    let stopped: { error: string; legacyLeft: number; validated: boolean; update: string }
    let storage: DatabaseHandle
    const completion: UpgradeProgress[] = []

    beforeAll(async () => {
      legacy = await createLegacyStore(kind, async (db) => {
        await loadLegacyLog(db)
        facts = await readLegacyFacts(db)
      })
      const migrated = await migrateOnly(legacy)
      try {
        const { db } = migrated
        // given a run that dies after its second batch (the progress report stands for the kill)
        let batches = 0
        const error = await upgradeLog(db, createKeyring(TEST_KEYS), {
          batchSize: 3,
          onProgress: () => {
            batches += 1
            if (batches === 2) throw new Error('killed')
          },
        }).then(
          () => 'finished',
          (failure: unknown) => String(failure),
        )
        const update = await db.execute(sql`update events set type = type`).then(
          () => 'updated',
          (failure: unknown) => String((failure as { cause?: unknown }).cause ?? failure),
        )
        stopped = {
          error,
          legacyLeft: (await legacyEvents(db))?.n ?? -1,
          validated: (await validated(db))?.validated ?? true,
          update,
        }
      } finally {
        await migrated.close()
      }
      // when the store is opened again
      storage = await openStorage(legacy.storage, { onProgress: (step) => completion.push(step) })
    })
    afterAll(async () => {
      await storage?.close()
      await legacy?.cleanup()
    })

    test('the stopped run keeps its sealed batches, the fence open and the log append-only', () => {
      expect(stopped).toEqual({
        error: 'Error: killed',
        legacyLeft: facts.positions.length - 6,
        validated: false,
        update: expect.stringContaining('append-only'),
      })
    })

    test('the next open completes it: every event sealed once, the plaintext gone from the file', async () => {
      expect(completion.at(-1)).toMatchObject({ step: 'done', sealed: facts.positions.length - 6 })
      expect((await legacyEvents(storage.db))?.n).toBe(0)
      expect((await validated(storage.db))?.validated).toBe(true)
      expect(await count(storage.db, 'events')).toBe(facts.positions.length)
      expect(await count(storage.db, 'owner_keys')).toBe(facts.owners.length)
      expect(await inTableFiles(storage.db, FILE_SAMPLES)).toEqual([])
    })

    test('the listings are those of the previous version, and the projection verifies', async () => {
      for (const owner of facts.owners)
        expect(await listing(storage.db, owner)).toEqual(facts.listings.get(owner) ?? [])
      expect(isInSync((await verifyProjection(storage.db, storage.keyring)).diff)).toBe(true)
    })
  })
}

describe('on a legacy log, before the upgrade', () => {
  for (const kind of KINDS) {
    test(`an insert in the previous version’s form is refused as soon as the migrations ran, on ${kind}`, async () => {
      const legacy = await createLegacyStore(kind, loadLegacyLog)
      const migrated = await migrateOnly(legacy)
      try {
        const insert = await migrated.db
          .execute(sql`insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
            values ('plant:78:olivia', 1, 'PlantCreated', 1, '{"id": "78", "name": "Late", "tag": null}',
                    '{"owner": "olivia", "requestId": "late"}', now())`)
          .then(
            () => 'inserted',
            (failure: unknown) => String((failure as { cause?: unknown }).cause ?? failure),
          )
        expect(insert).toContain('violates check constraint "events_erasable"')
        expect((await legacyEvents(migrated.db))?.n).toBe(await count(migrated.db, 'events'))
      } finally {
        await migrated.close()
        await legacy.cleanup()
      }
    })
  }

  test('instances opening one PostgreSQL store at once: one upgrades, the others wait for it', async () => {
    const legacy = await createLegacyStore('postgres', loadLegacyLog)
    const reports: UpgradeProgress[][] = [[], [], []]
    const handles = await Promise.all(
      reports.map((report) => openStorage(legacy.storage, { onProgress: (step) => report.push(step) })),
    )
    try {
      expect(reports.map((report) => report.at(-1)?.step ?? 'nothing').sort()).toEqual([
        'done',
        'nothing',
        'nothing',
      ])
      const [first] = handles
      if (!first) throw new Error('no store')
      expect((await legacyEvents(first.db))?.n).toBe(0)
      expect(await count(first.db, 'owner_keys')).toBe(4)
      // the instances waiting for the lock held no snapshot that kept the plaintext
      expect(reports.flat().map((step) => step.step)).not.toContain('held')
      expect(await inTableFiles(first.db, FILE_SAMPLES)).toEqual([])
    } finally {
      await Promise.all(handles.map((handle) => handle.close()))
      await legacy.cleanup()
    }
  })
})

describe('a transaction older than the sealing, on PostgreSQL', () => {
  // A session whose snapshot predates the upgrade (a report, a replica's query with
  // hot_standby_feedback) still sees the plaintext, and VACUUM FULL would copy it.
  async function withOldSnapshot<Result>(
    url: string,
    run: (end: () => void) => Promise<Result>,
  ): Promise<Result> {
    const holder = postgres(url, { max: 1, onnotice: () => {} })
    let end = () => {}
    const ended = new Promise<void>((resolve) => {
      end = resolve
    })
    let began = () => {}
    const begun = new Promise<void>((resolve) => {
      began = resolve
    })
    const transaction = holder.begin('isolation level repeatable read', async (tx) => {
      await tx`select 1`
      began()
      await ended
    })
    try {
      await begun
      return await run(end)
    } finally {
      end()
      await transaction
      await holder.end()
    }
  }

  test('is waited for before the table is rewritten', async () => {
    const legacy = await createLegacyStore('postgres', loadLegacyLog)
    const progress: string[] = []
    try {
      await withOldSnapshot(legacy.storage.kind === 'postgres' ? legacy.storage.url : '', async (end) => {
        const storage = await openStorage(legacy.storage, {
          onProgress: ({ step }) => {
            progress.push(step)
            if (step === 'wait') setTimeout(end, 300)
          },
        })
        try {
          expect(await inTableFiles(storage.db, FILE_SAMPLES)).toEqual([])
        } finally {
          await storage.close()
        }
      })
      expect(progress.filter((step) => step !== 'seal')).toEqual([
        'wait',
        'vacuum',
        'analyze',
        'validate',
        'done',
      ])
    } finally {
      await legacy.cleanup()
    }
  })

  test('held in another database, it does not hold up the first open of a new store: nothing there to rewrite', async () => {
    // given a snapshot held open in another database of the server, and a new, empty database
    const fresh = await createTestDatabase('new_store')
    try {
      await withOldSnapshot(POSTGRES_ADMIN_URL, async () => {
        // when the new store is opened with a wait longer than the test's own time limit
        const storage = await openStorage(
          { kind: 'postgres', url: fresh.url, poolSize: 2, statementTimeoutMs: 10_000, keys: TEST_KEYS },
          { snapshotWaitMs: 120_000 },
        )
        // then it opens, the log's upgrade done, without waiting for the snapshot to end
        try {
          expect(await count(storage.db, 'events')).toBe(0)
        } finally {
          await storage.close()
        }
      })
    } finally {
      await fresh.drop()
    }
  })

  test('still open after the bound: the upgrade completes and says what stays where', async () => {
    const legacy = await createLegacyStore('postgres', loadLegacyLog)
    const progress: string[] = []
    try {
      const left = await withOldSnapshot(
        legacy.storage.kind === 'postgres' ? legacy.storage.url : '',
        async () => {
          const storage = await openStorage(legacy.storage, {
            snapshotWaitMs: 300,
            onProgress: ({ step }) => progress.push(step),
          })
          try {
            return await inTableFiles(storage.db, FILE_SAMPLES)
          } finally {
            await storage.close()
          }
        },
      )
      expect(progress.filter((step) => step !== 'seal')).toEqual([
        'wait',
        'held',
        'vacuum',
        'analyze',
        'validate',
        'done',
      ])
      expect(left.length).toBeGreaterThan(0)
    } finally {
      await legacy.cleanup()
    }
  })
})
