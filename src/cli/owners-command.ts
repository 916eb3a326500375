import process from 'node:process'
import { parseDuration } from '../auth/issue-token.ts'
import type { Config } from '../config.ts'
import { isOwner, OWNER_RULE } from '../domain/plant.ts'
import { eraseOwner } from '../erasure/erase-owner.ts'
import { Failure, isFailure } from '../errors.ts'
import { erasureFeed } from '../feed/erasure-feed.ts'
import { recordedFeed } from '../feed/feed-fact.ts'
import { silentLogger } from '../logger.ts'
import { badValue, parseArguments } from './arguments.ts'
import { reportDatabaseFailure } from './command-failed.ts'
import { withStorage } from './projection-command.ts'

export const ERASE_USAGE = 'owners erase <subject> [--wait 30s]'

// CONTRACT §12: prints the number of plants the owner had when the erasure began. With a feed,
// `--wait` bounds how long the OwnerErased notice may take to reach the stream (NATS unreachable:
// exit 1, the owner hidden and the erasure pending until a rerun).
export async function eraseCommand(args: string[], config: Config): Promise<number> {
  const { positionals, values } = parseArguments(
    args,
    ERASE_USAGE,
    { wait: { type: 'string', default: '30s' } },
    1,
  )
  const [owner] = positionals
  if (!isOwner(owner)) throw new Failure('BAD_USAGE', `<subject>: ${OWNER_RULE}\nusage: ${ERASE_USAGE}`)
  const waitSeconds = parseDuration(values.wait)
  if (waitSeconds === undefined) throw badValue('wait', values.wait, 'a duration', ERASE_USAGE)
  return withStorage(config, async (db, storage) => {
    const published = await recordedFeed(db)
    if (published !== undefined && !config.feed) {
      throw new Failure(
        'BAD_SETTING',
        `owners erase refused, nothing was changed: this store publishes its log to the NATS stream "${published}"; ` +
          'set EVENTS_NATS_URL (and EVENTS_NATS_STREAM, EVENTS_NATS_SUBJECT_PREFIX) as the service has them, so that the owner leaves the stream too',
      )
    }
    const feed = config.feed
      ? erasureFeed({
          config: config.feed,
          // The embedded server too is reached through its URL.
          storage: { kind: 'postgres', ...storage.settings },
          db,
          logger: silentLogger(),
          waitMs: waitSeconds * 1000,
        })
      : undefined
    try {
      const { plants } = await eraseOwner(db, owner, { feed })
      process.stdout.write(`${plants}\n`)
      return 0
    } catch (error) {
      if (!isFailure(error, 'ERASURE_PENDING')) return reportDatabaseFailure(error, 'owners erase failed')
      process.stderr.write(
        `owners erase: ${error.message}; the owner is hidden, the erasure pending: run the command again to complete it\n`,
      )
      return 1
    } finally {
      await feed?.close()
    }
  })
}
