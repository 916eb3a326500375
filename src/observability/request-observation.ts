import { Elysia } from 'elysia'
import { HttpError } from '../http/http-error.ts'
import { isDatabaseUnavailable } from '../store/unavailable.ts'

export type RequestRecord = {
  requestId: string
  method: string
  // The route pattern (`/plants`), or `unmatched` for unknown paths, so labels stay few.
  route: string
  path: string
  status: number
  durationMs: number
  subject?: string
}

export type RequestObservationDeps = {
  onStarted?: () => void
  onFinished: (record: RequestRecord) => void
  allowedMethods: (path: string) => string[]
  requestIdOf: (request: Request) => string
  // A monotonic clock in milliseconds.
  clock?: () => number
}

type AfterResponseContext = {
  request: Request
  path: string
  route?: string
  set: { status?: number | string; headers: Record<string, unknown> }
  response?: unknown
  responseValue?: unknown
  error?: unknown
  code?: unknown
  owner?: unknown
}

// Times every request and reports how it ended, after the response has gone out.
export function requestObservation({
  onStarted = () => {},
  onFinished,
  allowedMethods,
  requestIdOf,
  clock = () => performance.now(),
}: RequestObservationDeps) {
  const startedAt = new WeakMap<Request, number>()
  return new Elysia({ name: 'request-observation' })
    .onRequest(({ request }) => {
      startedAt.set(request, clock())
      onStarted()
    })
    .onAfterResponse({ as: 'global' }, (context) => {
      const ctx = context as unknown as AfterResponseContext
      const started = startedAt.get(ctx.request) ?? clock()
      onFinished({
        requestId: requestIdOf(ctx.request),
        method: ctx.request.method,
        route: ctx.route ?? 'unmatched',
        path: ctx.path,
        status: finalStatus(ctx, allowedMethods),
        durationMs: clock() - started,
        subject: typeof ctx.owner === 'string' ? ctx.owner : undefined,
      })
    })
}

// Elysia does not hand the after-response hook the Response that the error handler returned, so
// for errors the status is worked out the way http/error-handler.ts maps them (tests pin both).
function finalStatus(ctx: AfterResponseContext, allowedMethods: (path: string) => string[]): number {
  const response = ctx.response ?? ctx.responseValue
  if (response instanceof Response) return response.status
  if (ctx.error === undefined) return Number(ctx.set.status ?? 200) || 200
  if (ctx.error instanceof HttpError) return ctx.error.status
  switch (ctx.code) {
    case 'VALIDATION':
    case 'PARSE':
      return 400
    case 'NOT_FOUND':
      return allowedMethods(ctx.path).length > 0 ? 405 : 404
  }
  return isDatabaseUnavailable(ctx.error) ? 503 : 500
}
