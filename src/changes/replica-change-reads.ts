import type { Database, Executor } from '../database/database.ts'
import {
  askReplicas,
  PRIMARY,
  type ReplicaAnswer,
  type ReplicaChoiceDeps,
} from '../replicas/replica-choice.ts'
import type { ChangeReads } from './change-reads.ts'
import { readOwnerChanges, readOwnerHead, readOwnerPseudonym } from './owner-changes.ts'
import { hasReplayed, type WalMark, type WalMarks } from './wal-marks.ts'

// `waitMs`: how long a read waits for a replica to replay the follower's position before the
// primary answers.
export type ReplicaChangeReadsDeps = ReplicaChoiceDeps & {
  primary: Executor
  marks: Pick<WalMarks, 'atLeast'>
  // The follower's position now.
  position: () => bigint
  // Told where each read was served: a replica's name, or 'primary'.
  onRead?: (source: string) => void
}

type Read<T> = (db: Executor, upTo: bigint) => Promise<T>

// A stream's reads from the replicas (docs/operating.md, Scaling out), as gap-free as from the
// primary: each read is served by a replica that has replayed the primary's WAL past a mark of the
// follower's position (wal-marks.ts), so it shows every event up to that position, and reads no
// further than it. A replica behind the mark is looked at again until `waitMs`, then the primary
// answers; one that fails is skipped, as listings do (replicas/replica-choice.ts).
export function replicaChangeReads({
  primary,
  marks,
  position,
  onRead = () => {},
  ...choice
}: ReplicaChangeReadsDeps): ChangeReads {
  const covered = async <T>(read: Read<T>): Promise<T> => {
    const mark = await marks.atLeast(position())
    const served = await askReplicas(choice, (db) => readReplayed(db, mark, read))
    if (served) {
      onRead(served.replica)
      return served.value
    }
    const value = await read(primary, mark.position)
    onRead(PRIMARY)
    return value
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
function readReplayed<T>(db: Database, mark: WalMark, read: Read<T>): Promise<ReplicaAnswer<T>> {
  return db.transaction(async (tx) => {
    if (!(await hasReplayed(tx, mark.lsn))) return { kind: 'behind' }
    return { kind: 'served', value: await read(tx, mark.position) }
  })
}
