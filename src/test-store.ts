import { Registry } from 'prom-client'
import { issueToken } from './auth/issue-token.ts'
import { createTokenVerifier } from './auth/token-verifier.ts'
import { runChanges } from './changes/changes-service.ts'
import { openStorage } from './opening/open-store.ts'
import { type Logger, silentLogger } from './shared/logger.ts'
import { type App, createApp } from './start/app.ts'

/** What `createInMemoryStore` may be given; each has a default. */
export type InMemoryStoreOptions = {
  /** The HS256 secret tokens are checked with (at least 32 bytes); a random one when left out. */
  secret?: Uint8Array
  /** Where the service logs; nowhere when left out. */
  logger?: Logger
  /** The clock of creates and tokens; the system's when left out. */
  now?: () => Date
}

/** A store of its own for one test, and the service on it. */
export type InMemoryStore = {
  /** The whole service, to call through `app.handle(request)` or Eden's `treaty(app)`: no port. */
  app: App
  /** A token for `subject`, signed with the store's secret, valid for an hour. */
  tokenFor: (subject: string) => Promise<string>
  /** Drops the store's database. */
  close: () => Promise<void>
}

/**
 * The service on a throwaway store, with every migration applied: for test suites. Each call is a
 * store of its own, empty: a database copied from a migrated template on one PostgreSQL server per
 * process, in a temporary folder, dropped when closed; the server goes when the process ends.
 */
export async function createInMemoryStore({
  secret = crypto.getRandomValues(new Uint8Array(32)),
  logger = silentLogger(),
  now = () => new Date(),
}: InMemoryStoreOptions = {}): Promise<InMemoryStore> {
  const storage = await openStorage({ kind: 'memory' })
  const registry = new Registry()
  const changes = await runChanges({ db: storage.db, keyring: storage.keyring, logger, registry })
  const verifyToken = createTokenVerifier({ secret })
  return {
    app: createApp({
      db: storage.db,
      keyring: storage.keyring,
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
