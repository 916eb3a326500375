import type { Config } from '../config.ts'
import { openStorage } from '../store/open-storage.ts'
import { parseArguments } from './arguments.ts'

export async function migrateCommand(args: string[], config: Config): Promise<number> {
  parseArguments(args, 'db migrate', {})
  const storage = await openStorage(config.storage)
  await storage.close()
  return 0
}
