import { createReadStream, createWriteStream, type WriteStream } from 'node:fs'
import { mkdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { KeyEncryptionKeys } from '../crypto/key-encryption-keys.ts'
import { createKeyring, type Keyring } from '../crypto/keyring.ts'
import { holdsPgliteStore, type Moved, PGLITE_FOLDER } from '../data-dir/pglite-folder.ts'
import { type Database, rowsOf } from '../database/database.ts'
import { upgradeLog } from '../keys/log-upgrade.ts'
import { wrapStoredKeys } from '../keys/wrap-stored-keys.ts'
import { migrationsFolder } from '../opening/migrate.ts'
import { Failure } from '../shared/errors.ts'
import { type Exported, exportEvents } from './export-events.ts'
import { importEvents, readLines } from './import-events.ts'

// Moves the store the previous engine left in DATA_DIR into this one's server (`db`), with the
// log's own tools: PGlite opens the old folder (its migrations and the log's upgrade applied, as
// that engine would have), `events export` writes it to a file beside it, `events import` reads
// that into the empty new store, all or nothing, and only then is the old folder renamed aside,
// kept with the export under the name returned. A move cut short is done again at the next start;
// one whose import committed but whose folder was not yet renamed is recognised by the new store
// holding as many events as the export. Undefined when there is nothing to move. PGlite is loaded
// only here, and only when such a folder exists. It takes no lock (locks/advisory-lock.ts holds one
// on a connection of its own, which PGlite has not): the old folder is this process's alone, as
// DATA_DIR is, and the import into the new store takes its locks there.
export async function moveFromPglite(
  db: Database,
  dataDir: string,
  keys: KeyEncryptionKeys,
  now = new Date(),
): Promise<Moved | undefined> {
  const old = join(dataDir, PGLITE_FOLDER)
  if (!(await holdsPgliteStore(dataDir))) return undefined
  const keptIn = join(dataDir, `pglite-${now.toISOString().replace(/[:.]/g, '-')}`)
  try {
    await mkdir(keptIn, { mode: 0o700 })
    const file = join(keptIn, 'events.ndjson')
    const keyring = createKeyring(keys)
    const exported = await exportOldStore(old, file, keyring)
    const stored = await countEvents(db)
    if (stored === 0 && exported.events > 0) {
      await importEvents(db, keyring, readLines(createReadStream(file)))
    } else if (stored !== exported.events) {
      throw new Error(`this engine's store already holds ${stored} events, the old one ${exported.events}`)
    }
    await rename(old, join(keptIn, PGLITE_FOLDER))
    return { events: exported.events, keptIn }
  } catch (error) {
    await rm(keptIn, { recursive: true, force: true })
    throw new Failure(
      'STORE_NOT_MOVED',
      `DATA_DIR ${dataDir} holds a store of the previous engine (PGlite, in ${old}) that could not be moved, and nothing was changed: ${causeOf(error)}; \`bun run cli db migrate\` tries again`,
    )
  }
}

// The old store's keys are wrapped, in this process, under the new store's key-encryption keys
// before they are exported, so that neither the export kept beside it nor the new store ever holds
// them raw; no key reaches the old engine either.
async function exportOldStore(folder: string, file: string, keyring: Keyring): Promise<Exported> {
  const [{ PGlite }, { pgcrypto }, { drizzle }, { migrate }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pgcrypto'),
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ])
  const client = await PGlite.create({ dataDir: folder, extensions: { pgcrypto } })
  try {
    const db = drizzle({ client })
    await migrate(db, { migrationsFolder })
    await wrapStoredKeys(db, keyring)
    await upgradeLog(db, keyring)
    const out = createWriteStream(file, { mode: 0o600 })
    const exported = await exportEvents(db, (chunk) => written(out, chunk))
    await new Promise<void>((resolve, reject) =>
      out.end((error?: Error | null) => (error ? reject(error) : resolve())),
    )
    return exported
  } finally {
    await client.close()
  }
}

function written(out: WriteStream, chunk: string): Promise<void> {
  return new Promise((resolve, reject) => out.write(chunk, (error) => (error ? reject(error) : resolve())))
}

async function countEvents(db: Database): Promise<number> {
  return rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from events`))[0]?.n ?? 0
}

// The first line of the innermost cause: no SQL text, and none of a row's values (a PostgreSQL
// error's detail may hold them).
function causeOf(error: unknown): string {
  let root = error as { cause?: unknown; message?: string }
  while (root.cause) root = root.cause as typeof root
  return String(root.message ?? root).split('\n')[0] ?? ''
}
