import type { Config } from '../config.ts'
import { openStorage } from '../store/open-storage.ts'

export async function migrateCommand(config: Config): Promise<number> {
  const storage = await openStorage(config.storage)
  await storage.close()
  return 0
}
