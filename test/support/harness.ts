import { sql } from 'drizzle-orm'
import { Registry } from 'prom-client'
import { createApp } from '../../src/app.ts'
import { issueToken } from '../../src/auth/issue-token.ts'
import { createTokenVerifier } from '../../src/auth/token-verifier.ts'
import { type ChangesDeps, startChanges } from '../../src/changes/start-changes.ts'
import type { CorsConfig } from '../../src/config.ts'
import { openStorage } from '../../src/log/open-store.ts'
import { silentLogger } from '../../src/logger.ts'
import { type DatabaseHandle, openPostgres, rowsOf } from '../../src/store/database.ts'
import { migratePostgresDatabase } from '../../src/store/migrate.ts'
import { createTestDatabase } from './postgres.ts'
import { TEST_KEYS } from './test-keys.ts'

export type StorageKind = 'postgres' | 'embedded'
export const STORAGE_KINDS: StorageKind[] = ['postgres', 'embedded']

export const TEST_SECRET = new TextEncoder().encode('test-secret-that-is-at-least-32-bytes-long!')

export type RequestOptions = {
  token?: string
  body?: unknown
  rawBody?: BodyInit
  headers?: Record<string, string>
}

export type HarnessOptions = {
  // Serve GET /plants/changes with these settings (the store's URL for notices on PostgreSQL).
  changes?: Omit<ChangesDeps, 'db' | 'logger' | 'registry' | 'noticesUrl'>
  // The origins whose pages may call it (CORS_ORIGINS); none unless given.
  cors?: CorsConfig
}

// The app wired to a real database, driven through app.handle (no socket).
export async function createHarness(kind: StorageKind, options: HarnessOptions = {}) {
  const testDatabase = kind === 'postgres' ? await createTestDatabase('http') : undefined
  let handle: DatabaseHandle
  if (testDatabase) {
    await migratePostgresDatabase(testDatabase.url, undefined, TEST_KEYS)
    handle = openPostgres({
      keys: TEST_KEYS,
      url: testDatabase.url,
      poolSize: 10,
      statementTimeoutMs: 10_000,
    })
  } else {
    // A throwaway store on the embedded PostgreSQL server, as users' test suites get one.
    handle = await openStorage({ kind: 'memory', keys: TEST_KEYS })
  }
  const registry = new Registry()
  const changes = options.changes
    ? await startChanges({
        ...options.changes,
        db: handle.db,
        logger: silentLogger(),
        registry,
        noticesUrl: testDatabase?.url,
      })
    : undefined
  const app = createApp({
    db: handle.db,
    verifyToken: createTokenVerifier({ secret: TEST_SECRET }),
    logger: silentLogger(),
    registry,
    changes,
    onAppended: changes?.appended,
    cors: options.cors,
  })

  const request = (method: string, path: string, options: RequestOptions = {}) => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization ??= `Bearer ${options.token}`
    let body = options.rawBody
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    return app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
  }

  const count = async (table: 'events' | 'plants') => {
    const result = await handle.db.execute(sql.raw(`select count(*)::int as n from ${table}`))
    const rows = rowsOf<{ n: number }>(result)
    return rows[0]?.n ?? 0
  }

  return {
    kind,
    app,
    db: handle.db,
    databaseUrl: testDatabase?.url,
    request,
    tokenFor: (subject: string, ttlSeconds = 3600) =>
      issueToken(TEST_SECRET, { subject, ttlSeconds, now: new Date() }),
    countEvents: () => count('events'),
    countPlants: () => count('plants'),
    close: async () => {
      await changes?.close()
      await handle.close()
      await testDatabase?.drop()
    },
  }
}

export type Harness = Awaited<ReturnType<typeof createHarness>>
