import type { Database } from '../database/database.ts'
import { isDatabaseUnavailable } from '../shared/database-error.ts'
import type { ReplicaSet } from './replica-health.ts'

// What a replica says to a read: it served it; it has not replayed far enough yet (`behind`: look
// again); or the read belongs on the primary whatever the wait (`primary`).
export type ReplicaAnswer<Value> = { kind: 'served'; value: Value } | { kind: 'behind' } | { kind: 'primary' }

export type ReplicaChoiceDeps = {
  replicas: Pick<ReplicaSet, 'available' | 'markDown'>
  // How long replicas that are behind are looked at again before the primary is asked.
  waitMs: number
  clock?: () => number
  sleep?: (ms: number) => Promise<void>
}

// The name a read served by the primary goes by, beside the replicas' (in metrics).
export const PRIMARY = 'primary'

// The replica that served, and when it was looked at; or undefined: ask the primary.
export type Served<Value> = { value: Value; replica: string; lookedAt: number } | undefined

// Between two looks at a lagging replica: short at first, as replicas are usually milliseconds
// behind.
const POLL_DELAYS_MS = [1, 2, 5, 10, 20, 50]

// Asks the replicas that are up, in turn, until one serves `ask`. Those behind are looked at again
// until `waitMs` has passed; one that fails is skipped (and left out until its next check when it
// cannot be reached). Undefined when none served in time, or one said the read is the primary's.
export async function askReplicas<Value>(
  {
    replicas,
    waitMs,
    clock = () => performance.now(),
    sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  }: ReplicaChoiceDeps,
  ask: (db: Database) => Promise<ReplicaAnswer<Value>>,
): Promise<Served<Value>> {
  const deadline = clock() + waitMs
  for (let attempt = 0; ; attempt++) {
    let waiting = false
    for (const replica of replicas.available()) {
      const lookedAt = clock()
      const answer = await ask(replica.db).catch((error: unknown) => {
        if (isDatabaseUnavailable(error)) replicas.markDown(replica)
        return undefined
      })
      if (answer?.kind === 'served') return { value: answer.value, replica: replica.name, lookedAt }
      if (answer?.kind === 'primary') return undefined
      if (answer?.kind === 'behind') waiting = true
    }
    const delay = POLL_DELAYS_MS[Math.min(attempt, POLL_DELAYS_MS.length - 1)] ?? 50
    if (!waiting || clock() + delay > deadline) return undefined
    await sleep(delay)
  }
}
