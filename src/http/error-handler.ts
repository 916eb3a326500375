import { Elysia } from 'elysia'
import { isFailure } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import { isDatabaseUnavailable } from '../store/database-error.ts'
import { errorResponse } from './http-error.ts'
import type { RequestIds } from './request-id.ts'

export type ErrorHandlerDeps = {
  logger: Logger
  // Methods the app serves on a path; drives 405 versus 404.
  allowedMethods: (path: string) => string[]
  requestIds: RequestIds
}

const RETRY_AFTER_SECONDS = '5'

// Every response carries X-Request-Id, and every error becomes {"error": status, "message": …}.
export function errorHandler({ logger, allowedMethods, requestIds }: ErrorHandlerDeps) {
  return new Elysia({ name: 'error-handler' })
    .onRequest(({ request, set }) => {
      set.headers['x-request-id'] = requestIds.assign(request)
    })
    .onError({ as: 'global' }, ({ code, error, request, path, set }) => {
      const requestId = requestIds.of(request)
      const reply = (status: number, message: string, headers: Record<string, string> = {}) => {
        // Elysia does not hand the after-response hook the Response returned here: the request
        // observation reads the status from `set`.
        set.status = status
        return errorResponse(status, message, { ...headers, 'x-request-id': requestId })
      }
      if (isFailure(error) && error.status !== undefined)
        return reply(error.status, error.message, error.headers)
      switch (code) {
        case 'VALIDATION':
          return reply(400, validationMessage(error))
        case 'PARSE':
          return reply(400, 'the body could not be parsed')
        case 'NOT_FOUND': {
          const allowed = allowedMethods(path)
          return allowed.length > 0
            ? reply(405, `${request.method} is not allowed on ${path}`, { allow: allowed.join(', ') })
            : reply(404, `no such path: ${path}`)
        }
      }
      if (isDatabaseUnavailable(error)) {
        logger.warn({ requestId, err: error }, 'database unavailable')
        return reply(503, 'the database is unavailable; retry later', { 'retry-after': RETRY_AFTER_SECONDS })
      }
      logger.error({ requestId, err: error }, 'unexpected error')
      return reply(500, `internal error (request id ${requestId})`)
    })
}

function validationMessage(error: {
  customError?: unknown
  valueError?: { path: string; message: string }
}): string {
  if (typeof error.customError === 'string') return error.customError
  const detail = error.valueError
  return detail ? `${detail.path.slice(1) || 'the request'}: ${detail.message}` : 'the request is invalid'
}
