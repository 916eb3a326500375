import { expect, test } from 'bun:test'
import { readersHeldWarning } from '../../src/observability/event-log-readers-held.ts'

// The warning an operator reads about a long transaction: whose database it is in decides what it
// asks of them.
const holder = { pid: 4242, state: 'idle in transaction', ageSeconds: 45 }

test("a transaction in another database: says so, why it holds this service's readers, and what its owner or the operator can do", () => {
  const line = readersHeldWarning({ ...holder, database: 'reports' }, 'plants')
  expect(line).toContain('in another database of this PostgreSQL server (reports)')
  expect(line).toContain("transaction ids are the server's")
  expect(line).toContain('its owner can end it')
  expect(line).toContain('a PostgreSQL server of its own')
  expect(line).not.toContain('\n')
})

test("a transaction in the service's own database: end it", () => {
  const line = readersHeldWarning({ ...holder, database: 'plants' }, 'plants')
  expect(line).toContain("in this service's own database")
  expect(line).toContain('end it')
  expect(line).not.toContain('another database')
})

test('a transaction whose database the role may not see: says which role to grant to know', () => {
  const line = readersHeldWarning({ ...holder, database: null }, 'plants')
  expect(line).toContain('pg_read_all_stats')
  expect(line).toContain("transaction ids are the server's")
})
