import { PRIMARY } from '../plants/read-plants.ts'
import type { Database, Executor } from '../store/database.ts'
import type { ReplicaSet } from '../store/replica-health.ts'
import { isDatabaseUnavailable } from '../store/unavailable.ts'
import type { ChangeReads } from './change-reads.ts'
import { readOwnerChanges, readOwnerHead, readOwnerPseudonym } from './owner-changes.ts'
import { hasReplayed, type WalMark, type WalMarks } from './wal-marks.ts'

export type ReplicaChangeReadsDeps = {
  primary: Executor
  replicas: Pick<ReplicaSet, 'available' | 'markDown'>
  marks: Pick<WalMarks, 'atLeast'>
  // The follower's position now.
  position: () => bigint
  // How long a read waits for a replica to replay the follower's position before the primary answers.
  waitMs: number
  // Told where each read was served: a replica's name, or 'primary'.
  onRead?: (source: string) => void
  clock?: () => number
  sleep?: (ms: number) => Promise<void>
}

// Between two looks at a lagging replica, as for listings (plants/read-plants.ts).
const POLL_DELAYS_MS = [1, 2, 5, 10, 20, 50]

type Read<T> = (db: Executor, upTo: bigint) => Promise<T>

// A stream's reads from the replicas (CONTRACT §10), as gap-free as from the primary: each read is
// served by a replica that has replayed the primary's WAL past a mark of the follower's position
// (wal-marks.ts), so it shows every event up to that position, and reads no further than it.
// A replica behind the mark is looked at again until `waitMs`, then the primary answers; one that
// fails is skipped (and marked down when unreachable), as listings do.
export function replicaChangeReads({
  primary,
  replicas,
  marks,
  position,
  waitMs,
  onRead = () => {},
  clock = () => performance.now(),
  sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}: ReplicaChangeReadsDeps): ChangeReads {
  const covered = async <T>(read: Read<T>): Promise<T> => {
    const mark = await marks.atLeast(position())
    const deadline = clock() + waitMs
    for (let attempt = 0; ; attempt++) {
      let waiting = false
      for (const replica of replicas.available()) {
        const answer = await readReplayed(replica.db, mark, read).catch((error: unknown) => {
          if (isDatabaseUnavailable(error)) replicas.markDown(replica)
          return undefined
        })
        if (answer === undefined) continue
        if (answer.replayed) {
          onRead(replica.name)
          return answer.value
        }
        waiting = true
      }
      const delay = POLL_DELAYS_MS[Math.min(attempt, POLL_DELAYS_MS.length - 1)] ?? 50
      if (!waiting || clock() + delay > deadline) {
        const value = await read(primary, mark.position)
        onRead(PRIMARY)
        return value
      }
      await sleep(delay)
    }
  }
  return {
    changesAfter: (owner, after, count) =>
      covered((db, upTo) => readOwnerChanges(db, owner, after, upTo, count)),
    head: (owner) => covered((db) => readOwnerHead(db, owner)),
    pseudonym: (owner) => covered((db) => readOwnerPseudonym(db, owner)),
  }
}

// `read` on `db` if it has replayed past the mark. The check is a statement of its own before the
// read, in one transaction (so one connection to one server): a statement's snapshot is taken
// before its functions run, so a check beside the rows could pass on a snapshot older than it.
function readReplayed<T>(
  db: Database,
  mark: WalMark,
  read: Read<T>,
): Promise<{ replayed: false } | { replayed: true; value: T }> {
  return db.transaction(async (tx) => {
    if (!(await hasReplayed(tx, mark.lsn))) return { replayed: false }
    return { replayed: true, value: await read(tx, mark.position) }
  })
}
