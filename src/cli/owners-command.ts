import process from 'node:process'
import { parseDuration } from '../auth/issue-token.ts'
import type { Config } from '../config.ts'
import { isOwner, OWNER_RULE } from '../domain/plant.ts'
import { eraseOwner } from '../erasure/erase-owner.ts'
import { Failure, isFailure } from '../errors.ts'
import { erasureFeed } from '../feed/erasure-feed.ts'
import { recordedFeed } from '../feed/feed-fact.ts'
import { silentLogger } from '../logger.ts'
import { badValue } from './arguments.ts'
import { command } from './command.ts'
import { reportDatabaseFailure } from './command-failed.ts'
import { withStorage } from './projection-command.ts'

export const ownersEraseCommand = command({
  name: 'owners erase',
  args: '<subject> [--wait <n>s|m|h|d]',
  purpose: 'forget an owner everywhere: print how many plants they had',
  notes: [
    '--wait: how long the feed may take to take the erasure notice (30s by default)',
    'beside running instances on PostgreSQL; the embedded store with its server stopped',
  ],
  options: { wait: { type: 'string', default: '30s' } },
  positionals: 1,
  reads: ['storage', 'feed'],
  refusals: 'the erasure is pending (the owner hidden; run the command again to complete it)',
  run: ({ positionals, values }, config) => eraseCommand(positionals, values.wait, config),
})

// CONTRACT §12: prints the number of plants the owner had when the erasure began. With a feed,
// `--wait` bounds how long the OwnerErased notice may take to reach the stream (NATS unreachable:
// exit 1, the owner hidden and the erasure pending until a rerun).
async function eraseCommand(positionals: string[], wait: string, config: Config): Promise<number> {
  const [owner] = positionals
  if (!isOwner(owner)) throw new Failure('BAD_USAGE', `<subject>: ${OWNER_RULE}`)
  const waitSeconds = parseDuration(wait)
  if (waitSeconds === undefined) throw badValue('wait', wait, 'a duration')
  return withStorage(config, async (db) => {
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
          storage: config.storage,
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
