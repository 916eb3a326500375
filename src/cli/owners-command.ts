import process from 'node:process'
import type { Config } from '../config/config.ts'
import { isOwner, OWNER_RULE } from '../domain/plant.ts'
import { eraseOwner } from '../erasure/erase-owner.ts'
import { noSuchOwner } from '../erasure/unknown-owner.ts'
import { erasureFeed } from '../feed/erasure-feed.ts'
import { feedToErase, recordedFeed } from '../feed/feed-fact.ts'
import { diskFull } from '../shared/disk-full.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import { createLogger, silentLogger } from '../shared/logger.ts'
import { createTracing } from '../tracing/otel-tracing.ts'
import { badValue } from './arguments.ts'
import { command } from './command.ts'
import { databaseCause, reportDatabaseFailure } from './command-failed.ts'
import { parseDuration } from './duration.ts'
import { withStorage } from './storage.ts'

// What an erasure cannot reach by itself, said once it completes (docs/erasure.md has the table).
const LEFTOVERS = [
  'forgotten in every live row; the bytes of its old rows stay in the files of plants, owner_keys and owner_generations (a plain VACUUM frees their space without erasing them) until VACUUM FULL plants, owner_keys, owner_generations rewrites them',
  "in PostgreSQL's WAL until it is recycled after checkpoints, and in replicas, backups and earlier exports until they expire: see docs/erasure.md",
]

export const ownersEraseCommand = command({
  name: 'owners erase',
  args: '<subject> [--wait <n>s|m|h|d] [--no-wait]',
  purpose: 'forget an owner everywhere: print how many plants they had',
  notes: [
    '--wait: how long the feed may take to take the erasure notice, and an import running to end (30s by default)',
    '--no-wait: a projection rebuild running, fail at once instead of waiting for it to end (it waits as long as the rebuild runs by default)',
    'the feed is the one the store records: other EVENTS_NATS_STREAM or EVENTS_NATS_SUBJECT_PREFIX settings are refused',
    'beside running instances, on PostgreSQL and on the embedded store (on its running server)',
  ],
  options: { wait: { type: 'string', default: '30s' }, 'no-wait': { type: 'boolean', default: false } },
  positionals: 1,
  reads: ['storage', 'feed', 'tracing'],
  refusals: 'the erasure is pending (the owner hidden; run the command again to complete it)',
  run: ({ positionals, values }, config) =>
    eraseCommand(positionals, values.wait, !values['no-wait'], config),
})

// Erasure (docs/erasure.md): prints the number of plants the owner had when the erasure began; what it waits
// for, and an owner it does not know, are said on stderr. `--wait` bounds how long the OwnerErased
// notice may take to reach the stream of the store's recorded feed, and an import running may take
// to end (past it: exit 1, the owner hidden and the erasure pending until a rerun).
// `waitForRebuild` false (--no-wait): a rebuild running, exit 1 at once, nothing erased.
async function eraseCommand(
  positionals: string[],
  wait: string,
  waitForRebuild: boolean,
  config: Config,
): Promise<number> {
  const [owner] = positionals
  if (!isOwner(owner)) throw new Failure('BAD_USAGE', `<subject>: ${OWNER_RULE}`)
  const waitSeconds = parseDuration(wait)
  if (waitSeconds === undefined) throw badValue('wait', wait, 'a duration')
  const say = (text: string) => process.stderr.write(`owners erase: ${text}\n`)
  // Spans that cannot be sent are said on stderr, as warnings.
  const tracing =
    config.tracing &&
    (await createTracing(
      config.tracing,
      createLogger('warn', { write: (line) => void process.stderr.write(line) }),
    ))
  return withStorage(config, async (db, storage) => {
    const feedConfig = feedToErase(await recordedFeed(db), config.feed)
    if (config.feed && !feedConfig)
      say('this store has never published its log to NATS; EVENTS_NATS_URL is not used')
    const feed = feedConfig
      ? erasureFeed({
          config: feedConfig,
          // The embedded server too is reached through its URL.
          storage: { kind: 'postgres', ...storage.settings },
          db,
          keyring: storage.keyring,
          logger: silentLogger(),
          waitMs: waitSeconds * 1000,
        })
      : undefined
    try {
      const { plants, completed } = await eraseOwner(db, owner, {
        feed,
        waitMs: waitSeconds * 1000,
        onWait: say,
        waitForRebuild,
        tracing,
      })
      if (completed === 0) say(await noSuchOwner(db, owner))
      else for (const line of LEFTOVERS) say(line)
      process.stdout.write(`${plants}\n`)
      return 0
    } catch (error) {
      if (isFailure(error, 'LOCK_HELD') || isFailure(error, 'LOCK_LOST')) {
        say(error.message)
        return 1
      }
      if (!isFailure(error, 'ERASURE_PENDING'))
        return reportDatabaseFailure(error, 'owners erase failed', storage)
      const cause = diskFull(error.cause) ? databaseCause(error.cause, storage) : error.message
      say(`${cause}; the owner is hidden, the erasure pending: run the command again to complete it`)
      return 1
    } finally {
      await feed?.close()
      await tracing?.shutdown()
    }
  })
}
