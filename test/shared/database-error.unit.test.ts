import { expect, test } from 'bun:test'
import { isDatabaseUnavailable } from '../../src/shared/database-error.ts'

// Drizzle wraps the driver's error; the code the decision rests on sits on `cause`.
const wrapped = (code: string) =>
  new Error('Failed query', { cause: Object.assign(new Error('x'), { code }) })

test.each([
  ['ECONNREFUSED', 'the server is down'],
  ['08006', 'the connection failed'],
  ['57P01', 'the server is shutting down'],
  ['25006', 'a failover left us on a read-only standby'],
])('given %s (%s), then the database counts as unavailable (503)', (code) => {
  expect(isDatabaseUnavailable(wrapped(code))).toBe(true)
})

test.each([
  ['23505', 'a unique violation'],
  ['42601', 'a syntax error'],
])('given %s (%s), then it is a fault of ours (500), not an outage', (code) => {
  expect(isDatabaseUnavailable(wrapped(code))).toBe(false)
})

const fromSyscall = (code: string, syscall: string) =>
  new Error('Failed query', { cause: Object.assign(new Error('x'), { code, syscall }) })

test.each([
  ['ENOENT', 'a Unix socket whose server is gone'],
  ['EACCES', 'a Unix socket this user may not open'],
])('given %s on connect (%s), then the database counts as unavailable (503)', (code) => {
  expect(isDatabaseUnavailable(fromSyscall(code, 'connect'))).toBe(true)
})

test.each([
  ['ENOENT', 'a file that does not exist'],
  ['EACCES', 'a file that may not be read'],
])('given %s from opening a file (%s), then it is not the database', (code) => {
  expect(isDatabaseUnavailable(fromSyscall(code, 'open'))).toBe(false)
})

test.each(['EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'])(
  'given %s, a host that cannot be reached, then the database counts as unavailable',
  (code) => {
    expect(isDatabaseUnavailable(wrapped(code))).toBe(true)
  },
)
