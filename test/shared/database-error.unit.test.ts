import { expect, test } from 'bun:test'
import { isDatabaseUnavailable, unreachableDatabase } from '../../src/shared/database-error.ts'

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

// What postgres.js rejects with when the server (or a pooler before it) refuses the connection,
// wrapped by Drizzle with the statement that met it.
const refused = (message: string, code: string) =>
  new Error('Failed query: select name from owners where sub = $1\nparams: alice', {
    cause: Object.assign(new Error(message), { code, severity: 'FATAL' }),
  })

test('given a pooler that refuses statement_timeout at connection, then one line names DATABASE_URL, what was refused and the fix, and no statement', () => {
  // when
  const line = unreachableDatabase(
    refused('unsupported startup parameter: statement_timeout', '08P01'),
  )?.message
  // then
  expect(line).toStartWith(
    'DATABASE_URL: cannot use the database: unsupported startup parameter: statement_timeout; ',
  )
  expect(line).toContain('add prepare=false to DATABASE_URL')
  expect(line).not.toContain('alice')
  expect(line).not.toContain('select')
  expect(line).not.toContain('\n')
})

test("given a server that refuses a parameter of DATABASE_URL's query at connection, then the line says to take it out", () => {
  // when
  const line = unreachableDatabase(
    refused('unrecognized configuration parameter "search_pth"', '42704'),
  )?.message
  // then
  expect(line).toContain('unrecognized configuration parameter "search_pth"')
  expect(line).toContain("take search_pth out of DATABASE_URL's query")
})

test('given an error of a statement, not of the connection, then it is no start failure', () => {
  // when
  const error = new Error('Failed query', {
    cause: Object.assign(new Error('unrecognized configuration parameter "x"'), {
      code: '42704',
      severity: 'ERROR',
    }),
  })
  // then
  expect(unreachableDatabase(error)).toBeUndefined()
})
