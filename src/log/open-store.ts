import type { Config } from '../config.ts'
import { type DatabaseHandle, openEmbedded, openPostgres } from '../store/database.ts'
import { migrateEmbeddedDatabase, migratePostgresDatabase } from '../store/migrate.ts'
import { type UpgradeOptions, upgradeLog } from './upgrade.ts'

// Opens the configured storage with every migration applied and the log in today's form: a log
// written before erasure is sealed first (log/upgrade.ts; `upgrade` reports its progress).
export async function openStorage(
  storage: Config['storage'],
  upgrade: UpgradeOptions = {},
): Promise<DatabaseHandle> {
  if (storage.kind === 'postgres') {
    await migratePostgresDatabase(storage.url, (db) => upgradeLog(db, upgrade))
    return openPostgres(storage)
  }
  const handle = await openEmbedded(storage.kind === 'memory' ? undefined : storage.dataDir)
  try {
    await migrateEmbeddedDatabase(handle)
    await upgradeLog(handle.db, upgrade)
  } catch (error) {
    await handle.close()
    throw error
  }
  return handle
}
