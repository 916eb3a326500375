import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { postgresClient } from '../../src/database/postgres-client.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

describe('on PostgreSQL', () => {
  let database: TestDatabase
  let sql: postgres.Sql
  beforeAll(async () => {
    database = await createTestDatabase('migrations')
    sql = postgres(database.url, { max: 1, onnotice: () => {} })
  })
  afterAll(async () => {
    await sql.end()
    await database.drop()
  })

  test('several instances migrating at once do not collide, and each migration runs once', async () => {
    await Promise.all(
      Array.from({ length: 5 }, () => migratePostgresDatabase(database.url, undefined, TEST_KEYS)),
    )
    const [row] = await sql`select count(*)::int as n from drizzle.__drizzle_migrations`
    const migrationFiles = [...new Bun.Glob('*.sql').scanSync('db/migrations')]
    expect(row?.n).toBe(migrationFiles.length)
  })

  test('the events table refuses UPDATE, DELETE and TRUNCATE', async () => {
    await sql`insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
              values ('s', 1, 'PlantCreated', 1, '{}', '{"pseudonym": "p"}', now())`
    await expect(sql`update events set type = 'x'`).rejects.toThrow('append-only')
    await expect(sql`delete from events`).rejects.toThrow('append-only')
    await expect(sql`truncate events`).rejects.toThrow('append-only')
    const [row] = await sql`select count(*)::int as n, min(type) as type from events`
    expect(row).toEqual({ n: 1, type: 'PlantCreated' })
  })

  test('a stream version can be appended only once', async () => {
    const append =
      () => sql`insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
                             values ('dup', 1, 'PlantCreated', 1, '{}', '{"pseudonym": "p"}', now())`
    await append()
    await expect(append()).rejects.toThrow('events_stream_version_unique')
  })
})

test('the same migrations build a throwaway store of the embedded server, append-only too', async () => {
  const handle = await openStorage({ kind: 'memory' })
  const client = postgresClient(handle.settings.url, { max: 1, onnotice: () => {} })
  try {
    await client`insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
                 values ('s', 1, 'PlantCreated', 1, '{}', '{"pseudonym": "p"}', now())`
    await expect(client`update events set type = 'x'`).rejects.toThrow('append-only')
    await expect(client`delete from events`).rejects.toThrow('append-only')
    await expect(client`truncate events`).rejects.toThrow('append-only')
    expect([...(await client`select count(*)::int as n, min(type) as type from events`)]).toEqual([
      { n: 1, type: 'PlantCreated' },
    ])
  } finally {
    await client.end()
    await handle.close()
  }
})
