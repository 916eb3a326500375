import { Registry } from 'prom-client'
import { type App, createApp } from './app.ts'
import { issueToken } from './auth/issue-token.ts'
import { createTokenVerifier } from './auth/token-verifier.ts'
import { startChanges } from './changes/start-changes.ts'
import { openStorage } from './log/open-store.ts'
import { type Logger, silentLogger } from './logger.ts'
import { type MemoryTemplate, openFromTemplate } from './store/memory-template.ts'

export type InMemoryStoreOptions = {
  // Made once with createMemoryTemplate(), it makes each store start in milliseconds, not seconds.
  template?: MemoryTemplate
  // The HS256 secret tokens are checked with (at least 32 bytes); a random one when left out.
  secret?: Uint8Array
  logger?: Logger
  now?: () => Date
}

export type InMemoryStore = {
  // The whole service, to call through `app.handle(request)` or Eden's `treaty(app)`: no port.
  app: App
  // A token for `subject`, signed with the store's secret, valid for an hour.
  tokenFor: (subject: string) => Promise<string>
  close: () => Promise<void>
}

// The service on an embedded database that lives in memory, with every migration applied: for test
// suites. Each call is a store of its own, empty, with no files and no lock.
export async function createInMemoryStore({
  template,
  secret = crypto.getRandomValues(new Uint8Array(32)),
  logger = silentLogger(),
  now = () => new Date(),
}: InMemoryStoreOptions = {}): Promise<InMemoryStore> {
  const storage = template ? await openFromTemplate(template) : await openStorage({ kind: 'memory' })
  const registry = new Registry()
  const changes = await startChanges({ db: storage.db, logger, registry })
  const verifyToken = createTokenVerifier({ secret })
  return {
    app: createApp({
      db: storage.db,
      verifyToken,
      logger,
      now,
      registry,
      changes,
      onAppended: changes.appended,
    }),
    tokenFor: (subject) => issueToken(secret, { subject, ttlSeconds: 3600, now: now() }),
    close: async () => {
      await changes.close()
      await storage.close()
    },
  }
}
