import { Elysia } from 'elysia'
import type { CorsConfig } from '../config/config.ts'

// What a page on another origin may send and read. The request headers are the ones the API
// reads; the response headers are the ones a client acts on (revalidating, paging, reading its
// writes, backing off, quoting a request id). Credentials are never involved: the token travels in
// Authorization, so `*` may stay `*`.
const ALLOWED_HEADERS =
  'Authorization, Content-Type, If-None-Match, Last-Event-ID, Plant-Store-Position, X-Request-Id'
const EXPOSED_HEADERS = 'ETag, Link, Plant-Store-Position, Retry-After, X-Request-Id'
// Chromium keeps a preflight at most 2 hours, Firefox 24; ten minutes lets a changed policy reach
// pages soon.
const PREFLIGHT_MAX_AGE_SECONDS = '600'

// The CORS headers of an ordinary response. With a list of origins the answer depends on the
// request's Origin, so every response says so (`Vary: Origin`) and only a listed origin gets the
// others: a refused page gets none and its browser keeps the response from it. With `*` the
// answer is the same for all and varies on nothing.
export function corsHeaders(policy: CorsConfig | undefined, request: Request): Record<string, string> {
  if (!policy) return {}
  const origin = allowedOrigin(policy, request.headers.get('origin'))
  const vary: Record<string, string> = policy.origins === '*' ? {} : { vary: 'Origin' }
  if (origin === undefined) return vary
  return {
    ...vary,
    'access-control-allow-origin': origin,
    'access-control-expose-headers': EXPOSED_HEADERS,
  }
}

function allowedOrigin(policy: CorsConfig, origin: string | null): string | undefined {
  if (policy.origins === '*') return '*'
  return origin !== null && policy.origins.includes(origin) ? origin : undefined
}

export type CorsDeps = {
  policy?: CorsConfig
  // Methods the app serves on a path: a preflight is answered only where one is, with those.
  allowedMethods: (path: string) => string[]
}

// Answers preflights of allowed origins on known paths (204, the path's methods, the headers the
// API reads) and adds the headers above to every other response, errors and streams included.
// Anything else goes on as without CORS: an unknown path stays 404, an OPTIONS that is no preflight
// of an allowed origin stays 405. Without a policy it adds nothing.
export function cors({ policy, allowedMethods }: CorsDeps) {
  const plugin = new Elysia({ name: 'cors' })
  if (!policy) return plugin
  return plugin.onRequest(({ request, set }) => {
    const headers = corsHeaders(policy, request)
    Object.assign(set.headers, headers)
    const preflight = request.method === 'OPTIONS' && request.headers.has('access-control-request-method')
    if (!preflight || headers['access-control-allow-origin'] === undefined) return
    const methods = allowedMethods(new URL(request.url).pathname)
    if (methods.length === 0) return
    delete set.headers['access-control-expose-headers']
    Object.assign(set.headers, {
      'access-control-allow-methods': methods.join(', '),
      'access-control-allow-headers': ALLOWED_HEADERS,
      'access-control-max-age': PREFLIGHT_MAX_AGE_SECONDS,
    })
    return new Response(null, { status: 204 })
  })
}
