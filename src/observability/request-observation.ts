import { Elysia } from 'elysia'

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
  // Unused (the error handler records its status); app.ts still passes it.
  allowedMethods?: (path: string) => string[]
  requestIdOf: (request: Request) => string
  // A monotonic clock in milliseconds.
  clock?: () => number
}

type AfterResponseContext = {
  request: Request
  path: string
  route?: string
  // The error handler writes the status of its answer here.
  set: { status?: number | string }
  response?: unknown
  responseValue?: unknown
  owner?: unknown
}

// Times every request and reports how it ended, after the response has gone out.
export function requestObservation({
  onStarted = () => {},
  onFinished,
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
      const response = ctx.response ?? ctx.responseValue
      onFinished({
        requestId: requestIdOf(ctx.request),
        method: ctx.request.method,
        route: ctx.route ?? 'unmatched',
        path: ctx.path,
        status: response instanceof Response ? response.status : Number(ctx.set.status ?? 200) || 200,
        durationMs: clock() - started,
        subject: typeof ctx.owner === 'string' ? ctx.owner : undefined,
      })
    })
}
