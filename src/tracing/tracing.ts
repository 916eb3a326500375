// The service's view of tracing: spans started with an explicit parent, ended explicitly. The
// OpenTelemetry SDK behind it is loaded only when tracing is on (otel-tracing.ts); off, there is
// no Tracing at all and callers skip their spans (`tracing?.startSpan`).
export type SpanKind = 'server' | 'client' | 'producer' | 'internal'

export type Attributes = Record<string, string | number | boolean>

export type SpanOptions = {
  kind?: SpanKind
  // The parent's W3C traceparent; without one (or with one that does not parse) a new trace.
  parent?: string
  // Spans this one relates to without being their child (the requests a batch served).
  links?: string[]
  attributes?: Attributes
}

export type SpanEnd = {
  // What the span turned out to be, once known (a request's route).
  name?: string
  attributes?: Attributes
  // Marks the span failed, with the error's message.
  error?: unknown
}

export type Span = {
  // This span as a W3C traceparent: what a child, here or in another process, continues from.
  traceparent: string
  end: (end?: SpanEnd) => void
}

export type Tracing = {
  startSpan: (name: string, options?: SpanOptions) => Span
  // Sends the spans still buffered, then stops.
  shutdown: () => Promise<void>
}

// Runs `work` in a child span of `parent` (when tracing), ending it with the outcome.
export async function inSpan<T>(
  tracing: Tracing | undefined,
  name: string,
  options: SpanOptions,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const span = tracing?.startSpan(name, options)
  try {
    const result = await work(span)
    span?.end()
    return result
  } catch (error) {
    span?.end({ error })
    throw error
  }
}
