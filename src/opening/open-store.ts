import { fileURLToPath } from 'node:url'
import { type Config, missingKeyEncryptionKeys } from '../config/config.ts'
import { type KeyEncryptionKeys, newKeyEncryptionKey } from '../crypto/key-encryption-keys.ts'
import { type DatabaseHandle, openPostgres } from '../database/database.ts'
import { throwawayServer } from '../embedded/throwaway-server.ts'
import { describeUpgrade, type UpgradeOptions } from '../keys/fenced-rewrite.ts'
import { upgradeLog } from '../keys/log-upgrade.ts'
import { requireKeysCovered, wrapStoredKeys } from '../keys/wrap-stored-keys.ts'
import { type DataDirStoreOptions, openDataDirStore } from './data-dir-store.ts'
import { migratePostgresDatabase, migrationsFolder } from './migrate.ts'

// A throwaway store's pool, sized as the embedded server's is (opening/data-dir-store.ts).
const THROWAWAY_POOL = { poolSize: 4, statementTimeoutMs: 10_000 }

export type OpenOptions = UpgradeOptions &
  Pick<DataDirStoreOptions, 'beside' | 'moveEarlierStore'> & {
    // What the opening did that an operator should hear of, in one line and with its figures: the
    // upgrade's progress, a move from the previous engine.
    tell?: (line: string, detail: object) => void
  }

// Opens the configured storage with every migration applied and the log in today's form: a log
// written before erasure is sealed first (keys/log-upgrade.ts; `onProgress` reports its
// progress), and a store the previous engine left in DATA_DIR is moved in. The embedded kinds are
// PostgreSQL servers the service runs itself (src/embedded/), used from here on as any
// PostgreSQL is. The service, the CLI and the test store all open their storage here.
export async function openStorage(
  storage: Config['storage'],
  { tell, moveEarlierStore, beside, ...given }: OpenOptions = {},
): Promise<DatabaseHandle> {
  const options: UpgradeOptions = {
    ...given,
    onProgress: (progress) => {
      given.onProgress?.(progress)
      tell?.(describeUpgrade(progress), progress)
    },
  }
  // Keys stored raw by an earlier version are wrapped before the log's upgrade, which makes keys.
  const prepare = (keys: KeyEncryptionKeys) => (url: string) =>
    migratePostgresDatabase(
      url,
      async (db, keyring) => {
        await wrapStoredKeys(db, keyring, options)
        await upgradeLog(db, keyring, options)
        await requireKeysCovered(db, keyring)
      },
      keys,
    )
  if (storage.kind === 'postgres') {
    const keys = requireKeys(storage.keys)
    await prepare(keys)(storage.url)
    return openPostgres({ ...storage, keys })
  }
  if (storage.kind === 'memory') {
    // A throwaway store's keys are as short-lived as it is: a key-encryption key of its own.
    const keys = storage.keys ?? [newKeyEncryptionKey()]
    return openThrowawayStore(keys, prepare(keys))
  }
  return openDataDirStore(storage.dataDir, { keys: storage.keys, prepare, beside, tell, moveEarlierStore })
}

// A database of its own on the throwaway server of this process (embedded/throwaway-server.ts),
// dropped when closed.
async function openThrowawayStore(
  keys: KeyEncryptionKeys,
  prepare: (url: string) => Promise<void>,
): Promise<DatabaseHandle> {
  const server = await throwawayServer({
    prepare,
    // The migrations, and the code that prepares a new store after them (the log's upgrade is in keys/).
    inputs: [
      migrationsFolder,
      ...['../event-log', '../keys'].map((folder) => fileURLToPath(new URL(folder, import.meta.url))),
    ],
    poolSize: THROWAWAY_POOL.poolSize,
  })
  const database = await server.createDatabase()
  const handle = openPostgres({ url: database.url, ...THROWAWAY_POOL, keys })
  return {
    ...handle,
    kind: 'embedded',
    processIds: server.processIds,
    close: async () => {
      await handle.close()
      await database.drop()
    },
  }
}

// PostgreSQL has no place for a key-encryption key the service could make: it must be given one.
function requireKeys(keys: KeyEncryptionKeys | undefined): KeyEncryptionKeys {
  if (keys) return keys
  throw missingKeyEncryptionKeys()
}
