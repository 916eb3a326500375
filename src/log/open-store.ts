import type { Config } from '../config.ts'
import { type DatabaseHandle, openPostgres } from '../store/database.ts'
import { openDataDirServer } from '../store/embedded/data-dir-server.ts'
import { throwawayServer } from '../store/embedded/throwaway-server.ts'
import { migratePostgresDatabase, migrationsFolder } from '../store/migrate.ts'
import { type UpgradeOptions, upgradeLog } from './upgrade.ts'

// The embedded server's pool. Two cores serve no more than a few statements at once, and each
// connection is a PostgreSQL process of its own: docs/operating.md (The embedded default) has the
// measurements.
const EMBEDDED_POOL = { poolSize: 5, statementTimeoutMs: 10_000 }
const THROWAWAY_POOL = { poolSize: 4, statementTimeoutMs: 10_000 }

export type OpenOptions = UpgradeOptions & {
  // A command of the CLI: on a DATA_DIR that a service holds, it works beside it, on its server.
  beside?: boolean
}

// Opens the configured storage with every migration applied and the log in today's form: a log
// written before erasure is sealed first (log/upgrade.ts; `onProgress` reports its progress). The
// embedded kinds are PostgreSQL servers the service runs itself (store/embedded/), used from here
// on as any PostgreSQL is.
export async function openStorage(
  storage: Config['storage'],
  options: OpenOptions = {},
): Promise<DatabaseHandle> {
  const prepare = (url: string) => migratePostgresDatabase(url, (db) => upgradeLog(db, options))
  if (storage.kind === 'postgres') {
    await prepare(storage.url)
    return openPostgres(storage)
  }
  if (storage.kind === 'memory') {
    const server = await throwawayServer({ prepare, inputs: migrationsFolder })
    const database = await server.createDatabase()
    const handle = openPostgres({ url: database.url, ...THROWAWAY_POOL })
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
  const server = await openDataDirServer(storage.dataDir, { beside: options.beside })
  try {
    await prepare(server.url)
  } catch (error) {
    await server.close()
    throw error
  }
  const handle = openPostgres({ url: server.url, ...EMBEDDED_POOL })
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
