import { expect, test } from 'bun:test'
import { isDatabaseUnavailable } from '../../src/store/unavailable.ts'

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
