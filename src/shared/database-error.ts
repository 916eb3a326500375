import { Failure } from './errors.ts'

// What the service knows of the errors a database connection gives: which mean "unreachable right
// now" (a 503, a start that stops naming DATABASE_URL), what an operator's one line says of the
// others, and what of them a log line may keep.

// Codes of a database that cannot be reached right now, as opposed to a bad query: the socket's
// (a host that refuses, resets or cannot be routed to, a name that does not resolve), postgres.js's
// own, and PostgreSQL's.
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '57014', // query_canceled (statement_timeout)
  '53300', // too_many_connections
  '25006', // read_only_sql_transaction: a standby during a failover, until DNS points at the primary
])
// A Unix socket whose server is gone has no file (ENOENT), or one this user may not open: the
// same codes from anything but a connect are a file's, not the database's.
const SOCKET_FILE_CODES = new Set(['ENOENT', 'EACCES'])
const SQLSTATE = /^[0-9A-Z]{5}$/

export function isDatabaseUnavailable(error: unknown): boolean {
  return causesOf(error).some(({ code, syscall }) => {
    if (typeof code !== 'string') return false
    if (SOCKET_FILE_CODES.has(code)) return syscall === 'connect'
    return UNREACHABLE_CODES.has(code) || code.startsWith('08')
  })
}

export function postgresErrorCode(error: unknown): string | undefined {
  return causesOf(error)
    .map(({ code }) => code)
    .find((code): code is string => typeof code === 'string' && SQLSTATE.test(code))
}

// The first line of what the database said: drizzle wraps the driver's error in a message that
// holds the SQL text, which an operator's one-line message leaves out.
export function databaseMessage(error: unknown): string {
  const root = causesOf(error).at(-1) ?? {}
  const message = rootMessage(error)
  return typeof root.detail === 'string' ? `${message} (${root.detail})` : message
}

// The connection's failure as one line naming DATABASE_URL, or undefined for any other error.
// The causes are the server's own words (no such database, role refused, a startup parameter
// refused: FATAL, the session never began) or the socket's (refused, host not found); neither
// holds the password, and no stack, SQL text or library source goes with them.
export function unreachableDatabase(error: unknown, connectTimeoutSeconds = 5): Failure | undefined {
  const code = postgresErrorCode(error)
  const refusedByServer =
    (code !== undefined && /^(28|3D|08|57P0|53300)/.test(code)) ||
    causesOf(error).some(({ severity }) => severity === 'FATAL')
  if (!refusedByServer && !isDatabaseUnavailable(error)) return undefined
  const message = rootMessage(error)
  const cause = message.includes('CONNECT_TIMEOUT')
    ? `no answer within ${connectTimeoutSeconds} s (${message.replace(/^write CONNECT_TIMEOUT /, '')})`
    : message
  const parameter = refusedParameter(message)
  const fix = parameter === undefined ? '' : `; ${parameterFix(parameter)}`
  // A refused startup parameter is fixed in a setting (DATABASE_URL's, or the pooler's): exit 2.
  return new Failure(
    parameter === undefined ? 'DATABASE_UNREACHABLE' : 'BAD_SETTING',
    `DATABASE_URL: cannot use the database: ${cause.replace(/\s+/g, ' ')}${fix}`,
  )
}

// The settings the service itself sends at connection unless DATABASE_URL has prepare=false
// (database/postgres-client.ts).
const SENT_AT_CONNECTION = new Set(['statement_timeout', 'plan_cache_mode'])

// A startup parameter refused by its name: PgBouncer's words for one it does not track, or
// PostgreSQL's for one it does not know.
function refusedParameter(message: string): string | undefined {
  return (
    /^unsupported startup parameter: (\S+)/.exec(message)?.[1] ??
    /^unrecognized configuration parameter "([^"]+)"/.exec(message)?.[1]
  )
}

function parameterFix(parameter: string): string {
  if (SENT_AT_CONNECTION.has(parameter))
    return `behind a pooler, add prepare=false to DATABASE_URL: the service then sends no ${[...SENT_AT_CONNECTION].join(' or ')} at connection and cancels a statement that runs too long itself (docs/operating.md, Pooling)`
  return `take ${parameter} out of DATABASE_URL's query (postgres.js sends every parameter it does not know to the server), or list it in the pooler's ignore_startup_parameters`
}

function rootMessage(error: unknown): string {
  const root = causesOf(error).at(-1) ?? {}
  return String(root.message ?? error).split('\n')[0] ?? ''
}

// Where a driver or an ORM keeps a statement, its values, or PostgreSQL's words about them: an
// error that has any is the database's, and may carry people (a batch's parameters are every
// create in it, other owners' too).
const STATEMENT_FIELDS = ['query', 'params', 'parameters', 'detail', 'where', 'internal_query', 'severity']

export function isDatabaseError(error: Error): boolean {
  const { code } = error as { code?: unknown }
  return (typeof code === 'string' && SQLSTATE.test(code)) || STATEMENT_FIELDS.some((field) => field in error)
}

// What of a database error names no person: the names PostgreSQL gives the error and the schema.
export function databaseErrorNames(
  error: Error,
): Record<'severity' | 'routine' | 'constraint' | 'table', unknown> {
  const fields = error as Error & Record<string, unknown>
  return {
    severity: fields.severity,
    routine: fields.routine,
    constraint: fields.constraint_name,
    table: fields.table_name,
  }
}

type Cause = { code?: unknown; syscall?: unknown; message?: unknown; detail?: unknown; severity?: unknown }

// Drizzle wraps driver errors: the driver's code sits somewhere along `cause`.
function causesOf(error: unknown): Cause[] {
  const causes: Cause[] = []
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    causes.push(current as Cause)
    current = (current as { cause?: unknown }).cause
  }
  return causes
}
