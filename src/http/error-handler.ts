import { Elysia } from 'elysia'
import { isDatabaseUnavailable } from '../shared/database-error.ts'
import { diskFull } from '../shared/disk-full.ts'
import { Failure, type FailureCode, isFailure } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import { errorResponse } from './http-error.ts'
import type { RequestIds } from './request-id.ts'

export type ErrorHandlerDeps = {
  logger: Logger
  // Methods the app serves on a path; drives 405 versus 404.
  allowedMethods: (path: string) => string[]
  requestIds: RequestIds
}

const RETRY_AFTER_SECONDS = '5'
// What the log line of a failure the database caused says, where the operator can do something.
const CAUSE_LOGGED: Partial<Record<FailureCode, string>> = {
  DATABASE_FULL: "database full: free space on the disk of the database's files",
}

// Every response carries X-Request-Id, and every error becomes {"error": status, "message": …}
// with the status its code has in the codes' table (src/shared/errors.ts); anything else is a 500.
export function errorHandler({ logger, allowedMethods, requestIds }: ErrorHandlerDeps) {
  return new Elysia({ name: 'error-handler' })
    .onRequest(({ request, set }) => {
      set.headers['x-request-id'] = requestIds.assign(request)
    })
    .onError({ as: 'global' }, ({ code, error, request, path, set }) => {
      const requestId = requestIds.of(request)
      const failure = failureOf(code, error, request, path, allowedMethods)
      const status = failure?.status ?? 500
      if (failure === undefined) logger.error({ requestId, err: error }, 'unexpected error')
      else if (failure.cause !== undefined)
        logger.warn({ requestId, err: failure.cause }, CAUSE_LOGGED[failure.code] ?? 'database unavailable')
      // Elysia does not hand the after-response hook the Response returned here: the request
      // observation reads the status from `set`.
      set.status = status
      const message = failure?.message ?? `internal error (request id ${requestId})`
      return errorResponse(status, message, { ...failure?.headers, 'x-request-id': requestId })
    })
}

// What an error means as a failure the API answers; undefined for a bug. `code` is Elysia's.
export function failureOf(
  code: unknown,
  error: unknown,
  request: Request,
  path: string,
  allowedMethods: (path: string) => string[],
): Failure | undefined {
  if (isFailure(error) && error.status !== undefined) return error
  switch (code) {
    case 'VALIDATION':
      return new Failure('BAD_REQUEST', validationMessage(error as ValidationError))
    case 'PARSE':
      return new Failure('BAD_REQUEST', 'the body could not be parsed')
    case 'NOT_FOUND': {
      const allowed = allowedMethods(path)
      return allowed.length > 0
        ? new Failure('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`, {
            allow: allowed.join(', '),
          })
        : new Failure('NOT_FOUND', `no such path: ${path}`)
    }
  }
  if (diskFull(error))
    return new Failure(
      'DATABASE_FULL',
      'the database has no room left to write; retry later',
      { 'retry-after': RETRY_AFTER_SECONDS },
      { cause: error },
    )
  if (!isDatabaseUnavailable(error)) return undefined
  return new Failure(
    'UNAVAILABLE',
    'the database is unavailable; retry later',
    { 'retry-after': RETRY_AFTER_SECONDS },
    { cause: error },
  )
}

type ValidationError = { customError?: unknown; valueError?: { path: string; message: string } }

function validationMessage(error: ValidationError): string {
  if (typeof error.customError === 'string') return error.customError
  const detail = error.valueError
  return detail ? `${detail.path.slice(1) || 'the request'}: ${detail.message}` : 'the request is invalid'
}
