import type { Database } from '../database/database.ts'
import { type HeldLock, takeLock } from './advisory-lock.ts'
import { LOCKS } from './lock-registry.ts'
import { LOCK_SPACES } from './lock-spaces.ts'

// An erasure's first step and a projection rebuild exclude each other (docs/erasure.md): a rebuild's
// table, filled before the erasure deleted the owner's rows, would bring them back at its swap.
// Rebuilds share the lock among themselves (two may run at once); an erasure's first step takes it
// alone, waiting for the rebuilds that run to finish. Each commits what it did under the lock in
// the lock's own transaction (locks/advisory-lock.ts): a swap or a first step whose lock was lost
// on the way commits nothing.
const { space, name, modes } = LOCKS.erasureOrRebuild

export async function takeRebuildLock(db: Database): Promise<HeldLock> {
  const held = await takeLock(
    db,
    { space: LOCK_SPACES[space], name, what: 'the projection rebuild' },
    { mode: modes.rebuilds, consequence: 'nothing was swapped; run it again' },
  )
  if (!held) throw new Error('a waited-for lock was not taken')
  return held
}

// `wait` false: undefined when a rebuild runs. `onWait`: called first when the erasure waits.
export function takeErasureLock(
  db: Database,
  { wait = true, onWait }: { wait?: boolean; onWait?: () => void } = {},
): Promise<HeldLock | undefined> {
  return takeLock(
    db,
    { space: LOCK_SPACES[space], name, what: 'the erasure' },
    { mode: modes["an erasure's first step"], wait, onWait, consequence: 'nothing was erased; run it again' },
  )
}
