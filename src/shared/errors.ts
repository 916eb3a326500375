// The failures the service and its command line report on purpose. As in postgres.js (its
// errors.js), one error class carries a code, and one table says what each code means at each
// edge: the HTTP status an API request answers with, and the exit code of a CLI command. Anything
// thrown without a code is a bug: a 500 that names the request id, or a stack on stderr.
const FAILURES = {
  // A request the API refuses (docs/api.md); the message is the Error body's.
  BAD_REQUEST: { status: 400 },
  UNAUTHORIZED: { status: 401 },
  NOT_FOUND: { status: 404 },
  METHOD_NOT_ALLOWED: { status: 405 },
  REQUEST_TIMEOUT: { status: 408 },
  CONFLICT: { status: 409 },
  PAYLOAD_TOO_LARGE: { status: 413 },
  UNSUPPORTED_MEDIA_TYPE: { status: 415 },
  TOO_MANY_STREAMS: { status: 429 },
  UNAVAILABLE: { status: 503 },
  // The database has no room left to write (disk_full): creates answer 503 until room is made.
  DATABASE_FULL: { status: 503 },
  // A setting or an argument that cannot work: the start stops, a command exits 2 (usage).
  BAD_SETTING: { exit: 2 },
  BAD_USAGE: { exit: 2 },
  // What stops a start or a command with nothing changed: exit 1, one line.
  DATA_DIR_IN_USE: { exit: 1 },
  // The embedded PostgreSQL cannot run here (no binaries for the platform, root without a user to
  // run it as, a folder it cannot reach, a start it refused), or a store of the previous engine
  // could not be moved into it.
  EMBEDDED_UNAVAILABLE: { exit: 1 },
  STORE_NOT_MOVED: { exit: 1 },
  DATABASE_UNREACHABLE: { status: 503, exit: 1 },
  IMPORT_REFUSED: { exit: 1 },
  LOG_BUSY: { exit: 1 },
  ERASURE_PENDING: { exit: 1 },
  // A lock another run holds, not waited for (--no-wait); a lock lost while its holder worked.
  LOCK_HELD: { exit: 1 },
  LOCK_LOST: { exit: 1 },
  // Inside the service, turned into one of the above where they surface.
  TOKEN_REJECTED: { status: 401 },
  KEY_SET_UNAVAILABLE: {},
  PURGE_REFUSED: {},
} satisfies Record<string, { status?: number; exit?: number }>

export type FailureCode = keyof typeof FAILURES

export class Failure extends Error {
  override name = 'Failure'

  constructor(
    readonly code: FailureCode,
    message: string,
    // Response headers that go with the HTTP answer (Retry-After, Allow, WWW-Authenticate).
    readonly headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(message, options)
  }

  // The HTTP status a request that meets this failure answers with, if it is one an API answers.
  get status(): number | undefined {
    return (FAILURES[this.code] as { status?: number }).status
  }

  // The exit code of a CLI command stopped by this failure, if a command may be.
  get exitCode(): number | undefined {
    return exitCodeOf(this.code)
  }
}

// The exit code of a command that a failure of this kind stops (the CLI's help lists them).
export function exitCodeOf(code: FailureCode): number | undefined {
  return (FAILURES[code] as { exit?: number }).exit
}

// Whether `error` is a failure, of one of `codes` when given.
export function isFailure(error: unknown, ...codes: FailureCode[]): error is Failure {
  return error instanceof Failure && (codes.length === 0 || codes.includes(error.code))
}
