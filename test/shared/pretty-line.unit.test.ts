import { expect, test } from 'bun:test'
import { prettyLine } from '../../src/shared/logger.ts'

// A line as pino writes it, at 12:34:56.789.
const pinoLine = (level: number, msg: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ level, time: '2026-01-02T12:34:56.789Z', msg, ...fields })

test('given a pino JSON line, when it is made pretty, then it reads time, level, message and fields', () => {
  const line = pinoLine(30, 'request', { method: 'GET', status: 200, route: '/plants' })
  expect(prettyLine(line)).toBe('12:34:56.789 INFO  request method=GET status=200 route=/plants\n')
})

test('given an error line, then its stack follows on the next line', () => {
  const line = pinoLine(50, 'unexpected error', { err: { stack: 'Error: boom\n    at x' } })
  expect(prettyLine(line)).toBe('12:34:56.789 ERROR unexpected error\n  Error: boom\n    at x\n')
})

test('given an error with a cause, then each is named by its kind, code and message, above its frames', () => {
  const line = pinoLine(40, 'database unavailable', {
    err: {
      type: 'DrizzleQueryError',
      stack: '    at query',
      cause: {
        type: 'Error',
        code: 'ECONNREFUSED',
        message: 'connect ECONNREFUSED',
        stack: '    at connect',
      },
    },
  })
  expect(prettyLine(line)).toBe(
    '12:34:56.789 WARN  database unavailable\n  DrizzleQueryError\n    at query\n  caused by Error ECONNREFUSED: connect ECONNREFUSED\n    at connect\n',
  )
})
