import { type RelayDeps, startRelay } from '../../src/feed/relay.ts'
import { startLogFollower } from '../../src/follower/follower.ts'
import type { Keyring } from '../../src/keys/keyring.ts'
import type { Executor } from '../../src/store/database.ts'

// A relay as a server runs it: on a follower of the log of its own, which `wake` wakes.
export function startTestRelay(
  { db, keyring }: { db: Executor; keyring: Keyring },
  deps: Omit<RelayDeps, 'log'>,
) {
  const log = startLogFollower({ db, keyring, logger: deps.logger, pollMs: deps.pollMs })
  const relay = startRelay({ ...deps, log })
  return {
    ...relay,
    wake: log.wake,
    stop: async () => {
      await relay.stop()
      await log.stop()
    },
  }
}

export type TestRelay = ReturnType<typeof startTestRelay>
