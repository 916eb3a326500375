import { fileURLToPath } from 'node:url'
import { type Config, missingKeyEncryptionKeys } from '../config/config.ts'
import { type KeyEncryptionKeys, newKeyEncryptionKey } from '../crypto/key-encryption-keys.ts'
import { fullDataDir } from '../data-dir/full-data-dir.ts'
import { removeUnplacedCopies } from '../data-dir/local-file.ts'
import { generatedKeys } from '../data-dir/local-keys.ts'
import { describeMove, holdsPgliteStore, type Moved } from '../data-dir/pglite-folder.ts'
import { type Database, type DatabaseHandle, openPostgres } from '../database/database.ts'
import { openDataDirServer } from '../embedded/data-dir-server.ts'
import { throwawayServer } from '../embedded/throwaway-server.ts'
import { describeUpgrade, type UpgradeOptions } from '../keys/fenced-rewrite.ts'
import { upgradeLog } from '../keys/log-upgrade.ts'
import { requireKeysCovered, wrapStoredKeys } from '../keys/wrap-stored-keys.ts'
import { Failure } from '../shared/errors.ts'
import { migratePostgresDatabase, migrationsFolder } from './migrate.ts'

// The embedded server's pool. Two cores serve no more than a few statements at once, and each
// connection is a PostgreSQL process of its own: docs/operating.md (The embedded default) has the
// measurements.
const EMBEDDED_POOL = { poolSize: 5, statementTimeoutMs: 10_000 }
const THROWAWAY_POOL = { poolSize: 4, statementTimeoutMs: 10_000 }

export type OpenOptions = UpgradeOptions & {
  // A command of the CLI: on a DATA_DIR that a service holds, it works beside it, on its server.
  beside?: boolean
  // What the opening did that an operator should hear of, in one line and with its figures: the
  // upgrade's progress, a move from the previous engine.
  tell?: (line: string, detail: object) => void
  // The move of a store the previous engine left in DATA_DIR (transfer/pglite-move.ts), handed in
  // by the two that move one: the service's start and `db migrate`. Without it such a DATA_DIR is
  // refused, for a command would work on a store that does not hold the log yet.
  moveEarlierStore?: EarlierStoreMove
}

export type EarlierStoreMove = (
  db: Database,
  dataDir: string,
  keys: KeyEncryptionKeys,
) => Promise<Moved | undefined>

// Opens the configured storage with every migration applied and the log in today's form: a log
// written before erasure is sealed first (keys/log-upgrade.ts; `onProgress` reports its
// progress), and a store the previous engine left in DATA_DIR is moved in. The embedded kinds are
// PostgreSQL servers the service runs itself (src/embedded/), used from here on as any
// PostgreSQL is. The service, the CLI and the test store all open their storage here.
export async function openStorage(
  storage: Config['storage'],
  { tell, moveEarlierStore, ...given }: OpenOptions = {},
): Promise<DatabaseHandle> {
  const options: UpgradeOptions = {
    ...given,
    onProgress: (progress) => {
      given.onProgress?.(progress)
      tell?.(describeUpgrade(progress), progress)
    },
  }
  // Keys stored raw by an earlier version are wrapped before the log's upgrade, which makes keys.
  const prepareWith = (keys: KeyEncryptionKeys) => (url: string) =>
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
    await prepareWith(keys)(storage.url)
    return openPostgres({ ...storage, keys })
  }
  if (storage.kind === 'memory') {
    // A throwaway store's keys are as short-lived as it is: a key-encryption key of its own.
    const keys = storage.keys ?? [newKeyEncryptionKey()]
    const server = await throwawayServer({
      prepare: prepareWith(keys),
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
  const server = await openDataDirServer(storage.dataDir, { beside: given.beside })
  let keys: KeyEncryptionKeys
  try {
    if (server.own) await removeUnplacedCopies(storage.dataDir)
    keys = storage.keys ?? (await generatedKeys(storage.dataDir, server.url))
    await prepareWith(keys)(server.url)
  } catch (error) {
    await server.close()
    throw fullDataDir(storage.dataDir, error) ?? error
  }
  const handle = openPostgres({ url: server.url, ...EMBEDDED_POOL, keys })
  try {
    if (server.own && (await holdsPgliteStore(storage.dataDir))) {
      const moved = await moveIn(storage.dataDir, moveEarlierStore)(handle.db, storage.dataDir, keys)
      if (moved) tell?.(describeMove(moved), moved)
    }
  } catch (error) {
    await handle.close()
    await server.close()
    throw error
  }
  return {
    ...handle,
    kind: 'embedded',
    processIds: server.processIds,
    dataDir: server.own ? storage.dataDir : undefined,
    lost: server.lost,
    close: async () => {
      await handle.close()
      await server.close()
    },
  }
}

function moveIn(dataDir: string, move: EarlierStoreMove | undefined): EarlierStoreMove {
  if (move) return move
  throw new Failure(
    'STORE_NOT_MOVED',
    `DATA_DIR ${dataDir} holds a store of the previous engine (PGlite) that is not moved yet: starting the service or \`bun run cli db migrate\` moves it`,
  )
}

// PostgreSQL has no place for a key-encryption key the service could make: it must be given one.
function requireKeys(keys: KeyEncryptionKeys | undefined): KeyEncryptionKeys {
  if (keys) return keys
  throw missingKeyEncryptionKeys()
}
