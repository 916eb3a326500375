import { expect, test } from 'bun:test'
import { prettyLine } from '../../src/shared/logger.ts'

test('given a pino JSON line, when it is made pretty, then it reads time, level, message and fields', () => {
  const line = JSON.stringify({
    level: 30,
    time: '2026-01-02T12:34:56.789Z',
    msg: 'request',
    method: 'GET',
    status: 200,
    route: '/plants',
  })
  expect(prettyLine(line)).toBe('12:34:56.789 INFO  request method=GET status=200 route=/plants\n')
})

test('given an error line, then its stack follows on the next line', () => {
  const line = JSON.stringify({
    level: 50,
    time: '2026-01-02T12:34:56.789Z',
    msg: 'unexpected error',
    err: { stack: 'Error: boom\n    at x' },
  })
  expect(prettyLine(line)).toBe('12:34:56.789 ERROR unexpected error\n  Error: boom\n    at x\n')
})

test('given an error with a cause, then each is named by its kind, code and message, above its frames', () => {
  const line = JSON.stringify({
    level: 40,
    time: '2026-01-02T12:34:56.789Z',
    msg: 'database unavailable',
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
