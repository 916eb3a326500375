import process from 'node:process'
import { databaseMessage, postgresErrorCode, unreachableDatabase } from '../shared/database-error.ts'
import { isFailure } from '../shared/errors.ts'

// A command the database stopped: one line on stderr, without a stack or SQL text, and exit code
// 1. A database that cannot be used at all (refused, unreachable) is said the way every command
// says it, naming DATABASE_URL. Anything else is a bug and goes on up.
export function reportDatabaseFailure(error: unknown, what: string): number {
  const unreachable = unreachableDatabase(error)
  if (unreachable) throw unreachable
  if (postgresErrorCode(error) === undefined && !isFailure(error, 'LOG_BUSY')) throw error
  const cause = isFailure(error, 'LOG_BUSY') ? error.message : databaseMessage(error)
  process.stderr.write(`${what}: ${cause}\n`)
  return 1
}
