import process from 'node:process'
import type { DatabaseHandle } from '../database/database.ts'
import { databaseMessage, postgresErrorCode, unreachableDatabase } from '../shared/database-error.ts'
import { diskFull } from '../shared/disk-full.ts'
import { isFailure } from '../shared/errors.ts'

// A command the database stopped: one line on stderr, without a stack or SQL text, and exit code
// 1. A lock lost on the way says so. A database that cannot be used at all (refused, unreachable)
// is said the way every command says it, naming DATABASE_URL. One whose disk filled says so, naming
// DATA_DIR on the embedded store. Anything else is a bug and goes on up.
export function reportDatabaseFailure(error: unknown, what: string, storage: DatabaseHandle): number {
  const said = isFailure(error, 'LOG_BUSY') || isFailure(error, 'LOCK_LOST')
  const unreachable = said ? undefined : unreachableDatabase(error)
  if (unreachable) throw unreachable
  if (postgresErrorCode(error) === undefined && !said) throw error
  process.stderr.write(`${what}: ${said ? error.message : databaseCause(error, storage)}\n`)
  return 1
}

// What the database said, in one line; a disk that filled is said with what to do, as the store
// says it (naming DATA_DIR on the embedded store).
export function databaseCause(error: unknown, storage: DatabaseHandle): string {
  if (!diskFull(error)) return databaseMessage(error)
  return (
    storage.fullDisk?.(error)?.message ??
    `the database has no room left to write (${databaseMessage(error)}): free space on the disk of its files, then try again`
  )
}
