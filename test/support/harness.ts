import { Registry } from 'prom-client'
import { issueToken } from '../../src/auth/issue-token.ts'
import { createTokenVerifier } from '../../src/auth/token-verifier.ts'
import { type ChangesDeps, runChanges } from '../../src/changes/changes-service.ts'
import type { CorsConfig } from '../../src/config/config.ts'
import { silentLogger } from '../../src/shared/logger.ts'
import { type AppDeps, createApp } from '../../src/start/app.ts'
import { tokenHeader } from './plant-client.ts'
import { count, openTestStorage, type StorageKind } from './storage.ts'

export { STORAGE_KINDS, type StorageKind } from './storage.ts'

export const TEST_SECRET = new TextEncoder().encode('test-secret-that-is-at-least-32-bytes-long!')

export type RequestOptions = {
  token?: string
  body?: unknown
  rawBody?: BodyInit
  headers?: Record<string, string>
}

export type HarnessOptions = {
  // Serve GET /plants/changes with these settings.
  changes?: Omit<ChangesDeps, 'db' | 'keyring' | 'logger' | 'registry'>
  // The origins whose pages may call it (CORS_ORIGINS); none unless given.
  cors?: CorsConfig
}

// The app on a database, as a test drives it through app.handle (no socket): the test's secret
// and a silent logger unless `deps` says otherwise. Every test that needs the app in process
// starts it here, or through createHarness below.
export function testApp(deps: Pick<AppDeps, 'db' | 'keyring'> & Partial<AppDeps>) {
  const app = createApp({
    verifyToken: createTokenVerifier({ secret: TEST_SECRET }),
    logger: silentLogger(),
    ...deps,
  })
  const request = (method: string, path: string, options: RequestOptions = {}) => {
    const headers: Record<string, string> = {
      ...(options.token === undefined ? {} : tokenHeader(options.token)),
      ...options.headers,
    }
    let body = options.rawBody
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    return app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
  }
  const tokenFor = (subject: string, ttlSeconds = 3600) =>
    issueToken(TEST_SECRET, { subject, ttlSeconds, now: new Date() })
  return { app, request, tokenFor }
}

export type TestApp = ReturnType<typeof testApp>

// The app wired to a real database, driven through app.handle (no socket).
export async function createHarness(kind: StorageKind, options: HarnessOptions = {}) {
  const handle = await openTestStorage(kind, { label: 'http', statementTimeoutMs: 10_000 })
  const registry = new Registry()
  const changes = options.changes
    ? await runChanges({
        ...options.changes,
        db: handle.db,
        keyring: handle.keyring,
        logger: silentLogger(),
        registry,
      })
    : undefined
  const { app, request, tokenFor } = testApp({
    db: handle.db,
    keyring: handle.keyring,
    registry,
    changes,
    onAppended: changes?.appended,
    cors: options.cors,
  })

  return {
    kind,
    app,
    db: handle.db,
    keyring: handle.keyring,
    databaseUrl: handle.url,
    request,
    tokenFor,
    countEvents: () => count(handle.db, 'events'),
    countPlants: () => count(handle.db, 'plants'),
    close: async () => {
      await changes?.close()
      await handle.close()
    },
  }
}

export type Harness = Awaited<ReturnType<typeof createHarness>>
