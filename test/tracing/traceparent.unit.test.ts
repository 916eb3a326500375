import { expect, test } from 'bun:test'
import { formatTraceparent, parseTraceparent } from '../../src/tracing/traceparent.ts'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN = '00f067aa0ba902b7'

test('a version 00 traceparent is read, and written back the same', () => {
  const header = `00-${TRACE}-${SPAN}-01`
  expect(parseTraceparent(header)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1 })
  expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, traceFlags: 1 })).toBe(header)
  expect(parseTraceparent(` 00-${TRACE}-${SPAN}-00 `)?.traceFlags).toBe(0)
})

test('a later version is read by its first four fields', () => {
  expect(parseTraceparent(`01-${TRACE}-${SPAN}-03-what-comes-next`)).toEqual({
    traceId: TRACE,
    spanId: SPAN,
    traceFlags: 3,
  })
})

test('what the specification says to ignore is undefined: the request starts a trace of its own', () => {
  for (const bad of [
    undefined,
    null,
    '',
    'garbage',
    `ff-${TRACE}-${SPAN}-01`,
    `00-${'0'.repeat(32)}-${SPAN}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `00-${TRACE.toUpperCase()}-${SPAN}-01`,
    `00-${TRACE}-${SPAN}-01-extra`,
    `00-${TRACE.slice(1)}-${SPAN}-01`,
  ])
    expect(parseTraceparent(bad)).toBeUndefined()
})
