import process from 'node:process'
import type { Config } from '../config.ts'
import { eraseOwner } from '../erasure/erase-owner.ts'
import { isOwner, OWNER_RULE } from '../plants/domain.ts'
import { parseArguments, UsageError } from './arguments.ts'
import { withStorage } from './projection-command.ts'

const ERASE_USAGE = 'owners erase <subject>'

// CONTRACT §12: prints the number of plants the owner had when the erasure began.
export async function eraseCommand(args: string[], config: Config): Promise<number> {
  const { positionals } = parseArguments(args, ERASE_USAGE, {}, 1)
  const [owner] = positionals
  if (!isOwner(owner)) throw new UsageError(`<subject>: ${OWNER_RULE}\nusage: ${ERASE_USAGE}`)
  return withStorage(config, async (db) => {
    const { plants } = await eraseOwner(db, owner)
    process.stdout.write(`${plants}\n`)
    return 0
  })
}
