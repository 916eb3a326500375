import type { KeyEncryptionKeys } from '../crypto/key-encryption-keys.ts'
import { openDataDir } from '../data-dir/data-dir.ts'
import { generatedKeys } from '../data-dir/local-keys.ts'
import { describeMove, type Moved } from '../data-dir/pglite-folder.ts'
import { type Database, type DatabaseHandle, openPostgres } from '../database/database.ts'
import { openDataDirServer } from '../embedded/data-dir-server.ts'
import { Failure } from '../shared/errors.ts'

// The embedded server's pool. Two cores serve no more than a few statements at once, and each
// connection is a PostgreSQL process of its own: docs/operating.md (The embedded default) has the
// measurements.
const EMBEDDED_POOL = { poolSize: 5, statementTimeoutMs: 10_000 }

export type EarlierStoreMove = (
  db: Database,
  dataDir: string,
  keys: KeyEncryptionKeys,
) => Promise<Moved | undefined>

export type DataDirStoreOptions = {
  // The key-encryption keys set (KEY_ENCRYPTION_KEYS); without them, the ones generated into DATA_DIR.
  keys?: KeyEncryptionKeys
  // Applies the migrations and brings the log to today's form on the server at `url`.
  prepare: (keys: KeyEncryptionKeys) => (url: string) => Promise<void>
  // A command of the CLI: on a DATA_DIR that a service holds, it works beside it, on its server.
  beside?: boolean
  tell?: (line: string, detail: object) => void
  // The move of a store the previous engine left in DATA_DIR (transfer/pglite-move.ts), handed in
  // by the two that move one: the service's start and `db migrate`. Without it such a DATA_DIR is
  // refused, for a command would work on a store that does not hold the log yet.
  moveEarlierStore?: EarlierStoreMove
}

// The store of DATA_DIR: the folder, checked and held (data-dir/data-dir.ts), its PostgreSQL
// server (src/embedded/), the key-encryption keys generated into it when none are set, and the
// database prepared. What fails for want of room on its disk, on the way or later in a command,
// is said as DATA_DIR's.
export async function openDataDirStore(
  path: string,
  { keys: set, prepare, beside, tell, moveEarlierStore }: DataDirStoreOptions,
): Promise<DatabaseHandle> {
  const dataDir = await openDataDir(path)
  const { server, keys } = await dataDir
    .within(async () => {
      const server = await openDataDirServer(dataDir, { beside })
      try {
        if (server.own) await dataDir.removeUnplacedCopies()
        const keys = set ?? (await generatedKeys(dataDir, server.url))
        await prepare(keys)(server.url)
        return { server, keys }
      } catch (error) {
        await server.close()
        throw error
      }
    })
    .catch((error: unknown) => {
      dataDir.close()
      throw error
    })
  const handle = openPostgres({ url: server.url, ...EMBEDDED_POOL, keys })
  const close = async () => {
    await handle.close()
    await server.close()
    dataDir.close()
  }
  try {
    if (server.own && (await dataDir.holdsPgliteStore())) {
      if (!moveEarlierStore)
        throw new Failure(
          'STORE_NOT_MOVED',
          `DATA_DIR ${path} holds a store of the previous engine (PGlite) that is not moved yet: starting the service or \`bun run cli db migrate\` moves it`,
        )
      const moved = await moveEarlierStore(handle.db, path, keys)
      if (moved) tell?.(describeMove(moved), moved)
    }
  } catch (error) {
    await close()
    throw error
  }
  return {
    ...handle,
    kind: 'embedded',
    processIds: server.processIds,
    dataDir: server.own ? path : undefined,
    fullDisk: dataDir.fullDisk,
    lost: server.lost,
    close,
  }
}
