import type { Keyring } from '../../src/crypto/keyring.ts'
import type { Executor } from '../../src/database/database.ts'
import { soleLeadership } from '../../src/feed/leadership.ts'
import { feedStream } from '../../src/feed/nats-stream.ts'
import { type RelayDeps, runRelay } from '../../src/feed/relay.ts'
import { runLogFollower } from '../../src/follower/follower.ts'
import { silentLogger } from '../../src/shared/logger.ts'
import type { TestFeed } from './nats.ts'

// A relay as a server runs it: on a follower of the log of its own, which `wake` wakes.
export function runTestRelay(
  { db, keyring }: { db: Executor; keyring: Keyring },
  deps: Omit<RelayDeps, 'follower'>,
) {
  const log = runLogFollower({ db, keyring, logger: deps.logger, pollMs: deps.pollMs })
  const relay = runRelay({ ...deps, follower: log })
  return {
    ...relay,
    wake: log.wake,
    stop: async () => {
      await relay.stop()
      await log.stop()
    },
  }
}

export type TestRelay = ReturnType<typeof runTestRelay>

// A relay publishing a store's log to a test feed's stream, as its one leader, logging nothing
// unless `options` says otherwise.
export function relayToFeed(
  store: { db: Executor; keyring: Keyring },
  feed: TestFeed,
  options: Partial<Omit<RelayDeps, 'follower'>> = {},
): TestRelay {
  return runTestRelay(store, {
    stream: feedStream(feed.nc, { stream: feed.stream, subjectPrefix: feed.prefix }),
    leadership: soleLeadership,
    messages: { subjectPrefix: feed.prefix, source: 'plant-store' },
    logger: silentLogger(),
    ...options,
  })
}
