import type { Config } from '../config.ts'
import { type DatabaseHandle, openEmbedded, openPostgres } from './database.ts'
import { migrateEmbeddedDatabase, migratePostgresDatabase } from './migrate.ts'

// Opens the configured storage with every migration applied.
export async function openStorage(storage: Config['storage']): Promise<DatabaseHandle> {
  if (storage.kind === 'postgres') {
    await migratePostgresDatabase(storage.url)
    return openPostgres(storage)
  }
  const handle = await openEmbedded(storage.kind === 'memory' ? undefined : storage.dataDir)
  await migrateEmbeddedDatabase(handle).catch(async (error: unknown) => {
    await handle.close()
    throw error
  })
  return handle
}
