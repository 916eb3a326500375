import { type RelayDeps, runRelay } from '../../src/feed/relay.ts'
import { runLogFollower } from '../../src/follower/follower.ts'
import type { Keyring } from '../../src/keys/keyring.ts'
import type { Executor } from '../../src/store/database.ts'

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
