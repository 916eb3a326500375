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
