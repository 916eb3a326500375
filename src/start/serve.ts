import type { CorsConfig } from '../config/config.ts'
import { corsHeaders } from '../http/cors.ts'
import { errorResponse } from '../http/http-error.ts'
import { chooseRequestId } from '../http/request-id.ts'
import { Failure } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import { within } from '../shared/time-limit.ts'
import type { App } from './app.ts'

export type RunningServer = { port: number; stop: () => Promise<void> }

export type ServeOptions = {
  hostname: string
  port: number
  requestTimeoutMs: number
  // Where a request the deadline answered is logged; the app logs every other answer itself.
  logger?: Logger
  // The app's CORS policy, for the answers given here instead of the app's.
  cors?: CorsConfig
}

type Handler = (request: Request) => Response | Promise<Response>

type DenoServe = {
  serve: (
    options: { hostname: string; port: number; onListen?: () => void },
    handler: Handler,
  ) => { addr: { port: number }; shutdown: () => Promise<void> }
}

// The runtime edge: Bun.serve under Bun, Deno.serve under Deno, both calling app.fetch. Stopping
// refuses new connections and resolves once the requests in flight have been answered.
export function serve(
  app: App,
  { hostname, port, requestTimeoutMs, logger, cors }: ServeOptions,
): RunningServer {
  const handler = withDeadline((request) => app.fetch(request), requestTimeoutMs, logger, cors)
  const deno = (globalThis as { Deno?: DenoServe }).Deno
  if (deno) {
    const server = listening(hostname, port, () =>
      deno.serve({ hostname, port, onListen: () => {} }, handler),
    )
    return { port: server.addr.port, stop: () => server.shutdown() }
  }
  // Bun closes a connection idle this long; it must outlast the deadline so the 503 gets out.
  const idleTimeout = Math.min(255, Math.ceil(requestTimeoutMs / 1000) + 5)
  const server = listening(hostname, port, () =>
    Bun.serve({
      hostname,
      port,
      idleTimeout,
      // The app refuses a body over its limit itself (http/json-body.ts), with the Error body and
      // the request id, before reading it; Bun's own limit (128 MiB) would answer a bare 413 first.
      // A body nothing reads is discarded as it arrives, never held.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      fetch: async (request, bun) => {
        const response = await handler(request)
        // An event stream keeps itself alive with comment lines; the idle limit would cut it.
        if (response.headers.get('content-type') === 'text/event-stream') bun.timeout(request, 0)
        return response
      },
    }),
  )
  return { port: server.port ?? port, stop: () => server.stop(false) }
}

// Whether the address can be listened on, tried before the start opens the store: a PORT in use
// or a bad HOST then stops it in one line, before any part has started (and has to be stopped,
// saying things on the way that point elsewhere). Port 0 always can.
export async function checkListenable(hostname: string, port: number): Promise<void> {
  if (port === 0) return
  const refuse = () => new Response(null, { status: 503 })
  const deno = (globalThis as { Deno?: DenoServe }).Deno
  if (deno) {
    await listening(hostname, port, () =>
      deno.serve({ hostname, port, onListen: () => {} }, refuse),
    ).shutdown()
    return
  }
  await listening(hostname, port, () => Bun.serve({ hostname, port, fetch: refuse })).stop(true)
}

// Whatever stops the listening socket is the address's fault: said in one line naming the
// variable, not as the runtime's stack (Bun: EADDRINUSE, EINVAL for a host that is no address;
// Deno: AddrInUse, a failed lookup).
function listening<T>(hostname: string, port: number, listen: () => T): T {
  try {
    return listen()
  } catch (error) {
    const cause = error instanceof Error ? error.message : String(error)
    const inUse = (error as { code?: unknown }).code === 'EADDRINUSE'
    throw new Failure(
      'BAD_SETTING',
      inUse
        ? `PORT ${port} is in use on HOST ${hostname}: stop what listens there, or set another PORT (0 picks a free one)`
        : `HOST ${hostname} cannot be listened on (${cause}): set HOST to an address of this machine, or 0.0.0.0 for all`,
      {},
      { cause: error },
    )
  }
}

// No request waits on a response longer than `timeoutMs`: a database connection that went silent
// (no reset, no error) would otherwise hold it until TCP gives up. A streamed body may go on.
// The app logs the request again when its handler ends at last, with the status it would have given.
function withDeadline(handler: Handler, timeoutMs: number, logger?: Logger, cors?: CorsConfig): Handler {
  return async (request) => {
    const response = await within(Promise.resolve(handler(request)), timeoutMs)
    if (response) return response
    const requestId = chooseRequestId(request.headers.get('x-request-id'))
    const { pathname } = new URL(request.url)
    logger?.warn(
      { requestId, method: request.method, path: pathname, status: 503, durationMs: timeoutMs },
      'request failed: no answer within the deadline',
    )
    return errorResponse(503, `no answer within ${timeoutMs} ms; retry later`, {
      ...corsHeaders(cors, request),
      'retry-after': '5',
      'x-request-id': requestId,
    })
  }
}
