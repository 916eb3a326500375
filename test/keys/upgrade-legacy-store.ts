import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type SQL, sql } from 'drizzle-orm'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import type { Config } from '../../src/config/config.ts'
import { openDataDir } from '../../src/data-dir/data-dir.ts'
import { type Database, type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { postgresClient } from '../../src/database/postgres-client.ts'
import { openDataDirServer } from '../../src/embedded/data-dir-server.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// A store as the version before erasure left it (migrations 0000–0005, commit c824ea0), so that
// this version's open (migrations, then the log's upgrade) can be tried on it.

export type StorageKind = 'postgres' | 'embedded'

// The migrations of that version: the files of journal entries 0000–0005, and the journal cut there.
const LAST_PREVIOUS_MIGRATION = 5
let previousFolder: Promise<string> | undefined
function previousMigrations(): Promise<string> {
  previousFolder ??= (async () => {
    const folder = await mkdtemp(join(tmpdir(), 'previous-migrations-'))
    const journal = JSON.parse(await readFile('db/migrations/meta/_journal.json', 'utf8')) as {
      entries: { idx: number; tag: string }[]
    }
    journal.entries = journal.entries.filter((entry) => entry.idx <= LAST_PREVIOUS_MIGRATION)
    await mkdir(join(folder, 'meta'))
    await writeFile(join(folder, 'meta', '_journal.json'), JSON.stringify(journal))
    for (const { tag } of journal.entries) await cp(`db/migrations/${tag}.sql`, join(folder, `${tag}.sql`))
    return folder
  })()
  return previousFolder
}

export type LegacyStore = { storage: Config['storage']; cleanup: () => Promise<void> }

// A store of `kind` at the previous migrations, `fill` run on it, then closed: ready to be opened.
export async function createLegacyStore(
  kind: StorageKind,
  fill: (db: Database) => Promise<void>,
): Promise<LegacyStore> {
  const migrationsFolder = await previousMigrations()
  // The previous migrations and `fill`, on one connection to the store's database.
  const migrateAndFill = async (url: string) => {
    const client = postgresClient(url, { max: 1, onnotice: () => {} })
    try {
      const db = drizzlePostgres({ client })
      await migratePostgres(db, { migrationsFolder })
      await fill(db)
    } finally {
      await client.end()
    }
  }
  if (kind === 'postgres') {
    const database = await createTestDatabase('upgrade')
    await migrateAndFill(database.url)
    return {
      storage: { kind, url: database.url, poolSize: 10, statementTimeoutMs: 60_000, keys: TEST_KEYS },
      cleanup: database.drop,
    }
  }
  const dataDir = await makeDataDir('legacy-store-')
  const server = await openDataDirServer(await openDataDir(dataDir))
  try {
    await migrateAndFill(server.url)
  } finally {
    await server.close()
  }
  return {
    storage: { kind, dataDir, keys: TEST_KEYS },
    cleanup: () => rm(dataDir, { recursive: true, force: true }),
  }
}

// The store's database as it is, nothing applied.
export async function openAsIs({ storage }: LegacyStore): Promise<DatabaseHandle> {
  if (storage.kind === 'postgres') {
    return openPostgres({ keys: TEST_KEYS, url: storage.url, poolSize: 1, statementTimeoutMs: 60_000 })
  }
  if (storage.kind !== 'embedded') throw new Error('a legacy store is kept on disk')
  const server = await openDataDirServer(await openDataDir(storage.dataDir))
  const handle = openPostgres({ keys: TEST_KEYS, url: server.url, poolSize: 1, statementTimeoutMs: 60_000 })
  return {
    ...handle,
    close: async () => {
      await handle.close()
      await server.close()
    },
  }
}

export const LEGACY_LOG = new URL('../erasure/fixtures/legacy-log.json', import.meta.url)

// Loads the fixture written by the previous version (test/erasure/fixtures/README.md) as it was: positions,
// plants rows, generations and checkpoint. Handed to the database as text, so ids stay exact.
export async function loadLegacyLog(db: Database): Promise<void> {
  const dump = await readFile(LEGACY_LOG, 'utf8')
  const rows = (table: string) =>
    sql`jsonb_populate_recordset(null::${sql.identifier(table)}, ${dump}::text::jsonb->${table})`
  await db.transaction(async (tx) => {
    await tx.execute(sql`
      insert into events (position, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      select position, stream_id, stream_version, type, schema_version, data, metadata, recorded_at
      from ${rows('events')}`)
    await tx.execute(
      sql`select setval(pg_get_serial_sequence('events', 'position'), (select max(position) from events))`,
    )
    for (const table of ['plants', 'owner_generations', 'projection_checkpoints']) {
      await tx.execute(sql`insert into ${sql.identifier(table)} select * from ${rows(table)}`)
    }
  })
}

// Inserts events in the previous version's form: metadata {owner, requestId}, stream plant:<id>:<owner>.
export function legacyInsert(values: SQL): SQL {
  return sql`insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    values ${values}`
}
