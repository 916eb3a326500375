import { Failure } from '../shared/errors.ts'
import { isDatabaseUnavailable, postgresErrorCode } from './unavailable.ts'

// The connection's failure as one line naming DATABASE_URL, or undefined for any other error.
// The causes are the server's own words (no such database, role refused) or the socket's (refused,
// host not found); neither holds the password, and no stack or library source goes with them.
export function unreachableDatabase(error: unknown, connectTimeoutSeconds: number): Failure | undefined {
  const code = postgresErrorCode(error)
  const refusedByServer = code !== undefined && /^(28|3D|08|57P0|53300)/.test(code)
  if (!refusedByServer && !isDatabaseUnavailable(error)) return undefined
  const message = error instanceof Error ? error.message : String(error)
  const cause = message.includes('CONNECT_TIMEOUT')
    ? `no answer within ${connectTimeoutSeconds} s (${message.replace(/^write CONNECT_TIMEOUT /, '')})`
    : message
  return new Failure(
    'DATABASE_UNREACHABLE',
    `DATABASE_URL: cannot use the database: ${cause.replace(/\s+/g, ' ')}`,
  )
}
