import process from 'node:process'
import { databaseMessage, postgresErrorCode, unreachableDatabase } from '../shared/database-error.ts'
import { isFailure } from '../shared/errors.ts'

// A command the database stopped: one line on stderr, without a stack or SQL text, and exit code
// 1. A lock lost on the way says so. A database that cannot be used at all (refused, unreachable)
// is said the way every command says it, naming DATABASE_URL. Anything else is a bug and goes on up.
export function reportDatabaseFailure(error: unknown, what: string): number {
  const said = isFailure(error, 'LOG_BUSY') || isFailure(error, 'LOCK_LOST')
  const unreachable = said ? undefined : unreachableDatabase(error)
  if (unreachable) throw unreachable
  if (postgresErrorCode(error) === undefined && !said) throw error
  const cause = said ? error.message : databaseMessage(error)
  process.stderr.write(`${what}: ${cause}\n`)
  return 1
}
