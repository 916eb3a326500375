// A W3C Trace Context `traceparent` (version 00): which trace a span belongs to, which span is the
// parent, and whether the trace is sampled.
export type SpanContextFields = { traceId: string; spanId: string; traceFlags: number }

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const INVALID_TRACE_ID = '0'.repeat(32)
const INVALID_SPAN_ID = '0'.repeat(16)

// The fields of a `traceparent` header; undefined for anything the specification says to ignore
// (a malformed value, all-zero ids, version ff, a version 00 value with more after it). A later
// version is read by its first four fields, as the specification asks.
export function parseTraceparent(header: string | null | undefined): SpanContextFields | undefined {
  const match = header === null || header === undefined ? null : TRACEPARENT.exec(header.trim())
  if (!match) return undefined
  const [, version, traceId, spanId, flags, rest] = match
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  if (!traceId || !spanId || !flags || traceId === INVALID_TRACE_ID || spanId === INVALID_SPAN_ID)
    return undefined
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) }
}

export function formatTraceparent({ traceId, spanId, traceFlags }: SpanContextFields): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`
}
