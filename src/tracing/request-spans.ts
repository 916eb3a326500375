import { Elysia } from 'elysia'
import type { Span, Tracing } from './tracing.ts'

// OpenTelemetry's stable HTTP attribute names, spelt here: importing them from
// @opentelemetry/semantic-conventions would load its 40 KB (~10 ms) at every start, tracing or not.
const ATTR_HTTP_REQUEST_METHOD = 'http.request.method'
const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code'
const ATTR_HTTP_ROUTE = 'http.route'
const ATTR_URL_PATH = 'url.path'

export type RequestSpans = ReturnType<typeof requestSpans>

// Liveness and readiness probes and metric scrapes come every few seconds and say nothing about
// the work the service does: collectors and instrumentations leave them out of traces, so as here.
const UNTRACED_PATHS = new Set(['/health', '/ready', '/metrics'])

// A server span for every request but the probes and scrapes, the child of the caller's span when the request carries a
// W3C `traceparent`. The span ends once the response has gone out, named by its route.
export function requestSpans(tracing: Tracing) {
  const spans = new WeakMap<Request, Span>()
  const plugin = new Elysia({ name: 'request-spans' })
    .onRequest(({ request }) => {
      const { method } = request
      const path = new URL(request.url).pathname
      if (UNTRACED_PATHS.has(path)) return
      const span = tracing.startSpan(method, {
        kind: 'server',
        parent: request.headers.get('traceparent') ?? undefined,
        attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_PATH]: path },
      })
      spans.set(request, span)
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
      const status =
        responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200) || 200
      spans.get(request)?.end({
        name: route ? `${request.method} ${route}` : request.method,
        attributes: route
          ? { [ATTR_HTTP_ROUTE]: route, [ATTR_HTTP_RESPONSE_STATUS_CODE]: status }
          : { [ATTR_HTTP_RESPONSE_STATUS_CODE]: status },
        error: status >= 500 ? `answered ${status}` : undefined,
      })
      spans.delete(request)
    })
  // The request's span, for the work done on its behalf (a create's event keeps it).
  return { plugin, traceparentOf: (request: Request) => spans.get(request)?.traceparent }
}
