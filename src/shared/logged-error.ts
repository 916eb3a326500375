import { databaseErrorNames, isDatabaseError } from './database-error.ts'

// What a log line keeps of an error, along its cause chain: its kind, its code and where it was
// thrown, never what it carries. A database error may carry people: Drizzle's error holds the
// statement and its parameters (those of a batch of creates hold every create in it, other owners'
// too) and repeats them in its message; PostgreSQL's message, detail and
// context may quote a value. So a database error keeps its SQLSTATE, severity, the routine that
// raised it and the schema names involved; any other error keeps its message (the service's own
// name no plant and no owner).
export type LoggedError = {
  type: string
  message?: string
  code?: string
  severity?: string
  routine?: string
  constraint?: string
  table?: string
  stack?: string
  cause?: LoggedError
}

const MAX_CAUSES = 5
// Identifiers only: SQLSTATEs, system error codes (ECONNREFUSED), postgres.js's and ours.
const CODE = /^[A-Za-z0-9_]{1,64}$/

export function loggedError(error: unknown): LoggedError {
  return describe(error, 0)
}

function describe(error: unknown, depth: number): LoggedError {
  if (!(error instanceof Error)) return { type: typeof error }
  const fields = error as Error & Record<string, unknown>
  const code = typeof fields.code === 'string' && CODE.test(fields.code) ? fields.code : undefined
  // Drizzle's and other wrappers keep the name `Error`; their class says more.
  const type = error.name === 'Error' ? error.constructor.name || error.name : error.name
  const logged: LoggedError = { type, code }
  if (isDatabaseError(error)) {
    const { severity, routine, constraint, table } = databaseErrorNames(error)
    logged.severity = identifier(severity)
    logged.routine = identifier(routine)
    logged.constraint = identifier(constraint)
    logged.table = identifier(table)
  } else logged.message = error.message
  logged.stack = framesOf(error.stack)
  if (error.cause !== undefined && depth < MAX_CAUSES) logged.cause = describe(error.cause, depth + 1)
  return logged
}

function identifier(value: unknown): string | undefined {
  return typeof value === 'string' && CODE.test(value) ? value : undefined
}

// The stack's frames without its first lines, which repeat the message.
function framesOf(stack: string | undefined): string | undefined {
  const frames = stack?.split('\n').filter((line) => /^\s+at /.test(line))
  return frames && frames.length > 0 ? frames.join('\n') : undefined
}
