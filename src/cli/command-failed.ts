import process from 'node:process'
import type { Config } from '../config/config.ts'
import { fullDataDir } from '../data-dir/full-data-dir.ts'
import { databaseMessage, postgresErrorCode, unreachableDatabase } from '../shared/database-error.ts'
import { diskFull } from '../shared/disk-full.ts'
import { isFailure } from '../shared/errors.ts'

// A command the database stopped: one line on stderr, without a stack or SQL text, and exit code
// 1. A lock lost on the way says so. A database that cannot be used at all (refused, unreachable)
// is said the way every command says it, naming DATABASE_URL. One whose disk filled says so, naming
// DATA_DIR on the embedded store. Anything else is a bug and goes on up.
export function reportDatabaseFailure(error: unknown, what: string, storage: Config['storage']): number {
  const said = isFailure(error, 'LOG_BUSY') || isFailure(error, 'LOCK_LOST')
  const unreachable = said ? undefined : unreachableDatabase(error)
  if (unreachable) throw unreachable
  if (postgresErrorCode(error) === undefined && !said) throw error
  process.stderr.write(`${what}: ${said ? error.message : databaseCause(error, storage)}\n`)
  return 1
}

// What the database said, in one line; a disk that filled is said with what to do, naming DATA_DIR
// on the embedded store.
export function databaseCause(error: unknown, storage: Config['storage']): string {
  if (!diskFull(error)) return databaseMessage(error)
  const inDataDir = storage.kind === 'embedded' ? fullDataDir(storage.dataDir, error) : undefined
  return (
    inDataDir?.message ??
    `the database has no room left to write (${databaseMessage(error)}): free space on the disk of its files, then try again`
  )
}
