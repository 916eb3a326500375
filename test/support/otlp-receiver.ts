// An OTLP/HTTP receiver of traces, as a collector listens: POST /v1/traces with the JSON encoding.
// It keeps every span it is sent, flattened with its resource's attributes.

export type ReceivedSpan = {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  links: { traceId: string; spanId: string }[]
  attributes: Record<string, unknown>
  status?: { code?: number; message?: string }
  serviceName?: unknown
  resource: Record<string, unknown>
}

export type OtlpReceiver = {
  url: string
  spans: () => ReceivedSpan[]
  // How many POSTs arrived, whatever their path or body.
  posts: () => number
  // Resolves once a span named `name` has arrived (or throws after `timeoutMs`).
  waitForSpan: (name: string, timeoutMs?: number) => Promise<ReceivedSpan>
  stop: () => Promise<void>
}

type AnyValue = {
  stringValue?: string
  intValue?: string | number
  boolValue?: boolean
  doubleValue?: number
}
type KeyValue = { key: string; value: AnyValue }
type OtlpSpan = {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  links?: { traceId: string; spanId: string }[]
  attributes?: KeyValue[]
  status?: { code?: number; message?: string }
}
type ExportRequest = {
  resourceSpans: { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans: OtlpSpan[] }[] }[]
}

const plainValue = (value: AnyValue): unknown =>
  value.stringValue ??
  value.boolValue ??
  value.doubleValue ??
  (value.intValue === undefined ? undefined : Number(value.intValue))
const attributesOf = (list: KeyValue[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, plainValue(value)]))

export function startOtlpReceiver(): OtlpReceiver {
  const received: ReceivedSpan[] = []
  let posts = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (request) => {
      posts++
      const path = new URL(request.url).pathname
      if (request.method !== 'POST' || path !== '/v1/traces') return new Response('not here', { status: 404 })
      if (!request.headers.get('content-type')?.includes('application/json'))
        return new Response('JSON only', { status: 415 })
      const body = (await request.json()) as ExportRequest
      for (const { resource, scopeSpans } of body.resourceSpans) {
        const resourceAttributes = attributesOf(resource?.attributes)
        const serviceName = resourceAttributes['service.name']
        for (const { spans } of scopeSpans) {
          for (const span of spans) {
            received.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              kind: span.kind,
              links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
              attributes: attributesOf(span.attributes),
              status: span.status,
              serviceName,
              resource: resourceAttributes,
            })
          }
        }
      }
      return Response.json({})
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans: () => [...received],
    posts: () => posts,
    waitForSpan: async (name, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs
      while (Date.now() < deadline) {
        const found = received.find((span) => span.name === name)
        if (found) return found
        await Bun.sleep(50)
      }
      throw new Error(
        `no span "${name}" within ${timeoutMs} ms; got ${received.map((span) => span.name).join(', ')}`,
      )
    },
    stop: () => server.stop(true),
  }
}
