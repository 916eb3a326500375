// Errors meaning "the database cannot be reached right now", as opposed to a bad query.
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
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

export function isDatabaseUnavailable(error: unknown): boolean {
  return codesOf(error).some((code) => CONNECTION_CODES.has(code) || code.startsWith('08'))
}

export function postgresErrorCode(error: unknown): string | undefined {
  return codesOf(error).find((code) => /^[0-9A-Z]{5}$/.test(code))
}

// Drizzle wraps driver errors: the driver's code sits somewhere along `cause`.
function codesOf(error: unknown): string[] {
  const codes: string[] = []
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string') codes.push(code)
    current = (current as { cause?: unknown }).cause
  }
  return codes
}
