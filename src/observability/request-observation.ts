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
  requestIdOf: (request: Request) => string
  // A monotonic clock in milliseconds.
  clock?: () => number
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
      const { request, path, route, set, responseValue } = context
      // The authentication plugin's caller, on the routes that have one.
      const { owner } = context as { owner?: unknown }
      onFinished({
        requestId: requestIdOf(request),
        method: request.method,
        route: route ?? 'unmatched',
        path,
        // An error's status is in `set`: the error handler writes there the status it answered.
        status: responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200) || 200,
        durationMs: clock() - (startedAt.get(request) ?? clock()),
        subject: typeof owner === 'string' ? owner : undefined,
      })
    })
}
