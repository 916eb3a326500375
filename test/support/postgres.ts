import { afterAll, beforeAll } from 'bun:test'
import postgres from 'postgres'

// Tests always need a real PostgreSQL: a missing server fails the run, it never skips.
export const POSTGRES_ADMIN_URL =
  process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export type TestDatabase = { url: string; name: string; drop: () => Promise<void> }

// A fresh, uniquely named database; drop() removes it (forcing out leftover connections).
export async function createTestDatabase(label = 'test'): Promise<TestDatabase> {
  const name = `plant_store_${label.replace(/\W/g, '_')}_${Date.now().toString(36)}_${crypto.randomUUID().slice(0, 8)}`
  const admin = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    await admin.unsafe(`create database "${name}"`)
  } catch (error) {
    throw new Error(`PostgreSQL is required for the tests (${POSTGRES_ADMIN_URL}): ${String(error)}`)
  } finally {
    await admin.end()
  }
  const url = new URL(POSTGRES_ADMIN_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const cleanup = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} })
      await cleanup.unsafe(`drop database if exists "${name}" with (force)`)
      await cleanup.end()
    },
  }
}

export type FileDatabase = { url: () => string; admin: () => postgres.Sql }

// A database of the test file's own, made before its tests and dropped after them, with a client
// of one connection for what a test does from outside (ending a backend, reading pg_stat_activity).
export function databaseForFile(label: string): FileDatabase {
  let database: TestDatabase | undefined
  let admin: postgres.Sql | undefined
  beforeAll(async () => {
    database = await createTestDatabase(label)
    admin = postgres(database.url, { max: 1, onnotice: () => {} })
  })
  afterAll(async () => {
    await admin?.end()
    await database?.drop()
  })
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the file database is made before the tests')
    return value
  }
  return { url: () => opened(database).url, admin: () => opened(admin) }
}
