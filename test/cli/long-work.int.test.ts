import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { withStorage } from '../../src/cli/storage.ts'
import { loadConfig } from '../../src/config/config.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { TEST_KEY_ENCRYPTION_KEYS } from '../support/test-keys.ts'

// The CLI's long work (import, export, rebuild, verify, rotate) is not cut by the statement
// timeout the service gives its requests.

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase('cli_long_work')
})
afterAll(() => database?.drop())

const config = () =>
  loadConfig({
    DATABASE_URL: database.url,
    KEY_ENCRYPTION_KEYS: TEST_KEY_ENCRYPTION_KEYS,
    DATABASE_STATEMENT_TIMEOUT_MS: '200',
  })

const slowStatement = (long: boolean) =>
  withStorage(
    config(),
    async (db) => {
      await db.execute(sql`select pg_sleep(0.6)`)
      return 0
    },
    { long },
  )

test('given a statement timeout of 200 ms, when a long command runs a statement of 600 ms, then it completes', async () => {
  expect(await slowStatement(true)).toBe(0)
})

test('given a statement timeout of 200 ms, when another command runs a statement of 600 ms, then the timeout still cuts it', async () => {
  const error = await slowStatement(false).catch((failure: unknown) => failure)
  expect(String((error as { cause?: unknown }).cause ?? error)).toContain('statement timeout')
})
