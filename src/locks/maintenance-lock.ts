import type { Database } from '../database/database.ts'
import { type HeldLock, type LockOptions, takeLock, withLock } from './advisory-lock.ts'
import { LOCKS } from './lock-registry.ts'
import { LOCK_SPACES } from './lock-spaces.ts'

// An erasure's first step and a projection rebuild exclude each other (docs/erasure.md): a rebuild's
// table, filled before the erasure deleted the owner's rows, would bring them back at its swap.
// Rebuilds share the lock among themselves (two may run at once); an erasure's first step takes it
// alone, waiting for the rebuilds that run to finish. Each commits what it did under the lock in
// the lock's own transaction (locks/advisory-lock.ts): a swap or a first step whose lock was lost
// on the way commits nothing.
const { space, name, modes } = LOCKS.erasureOrRebuild

const REBUILD = { space: LOCK_SPACES[space], name, what: 'the projection rebuild' }
const REBUILDING: LockOptions = { mode: modes.rebuilds, consequence: 'nothing was swapped; run it again' }
const ERASURE = { space: LOCK_SPACES[space], name, what: 'the erasure' }
const ERASING: LockOptions = {
  mode: modes["an erasure's first step"],
  consequence: 'nothing was erased; run it again',
}

export function takeRebuildLock(db: Database): Promise<HeldLock> {
  return takeLock(db, REBUILD, REBUILDING)
}

// Runs `work` holding the rebuild's share of the lock, waiting for an erasure's first step.
export function withRebuildLock<Result>(
  db: Database,
  work: (held: HeldLock) => Promise<Result>,
): Promise<Result> {
  return withLock(db, REBUILD, REBUILDING, work)
}

// `wait` false: undefined when a rebuild runs. `onWait`: called first when the erasure waits.
export function takeErasureLock(
  db: Database,
  { wait = true, onWait }: { wait?: boolean; onWait?: () => void } = {},
): Promise<HeldLock | undefined> {
  return takeLock(db, ERASURE, { ...ERASING, wait, onWait })
}

// Runs `work` holding the lock alone, once the rebuilds that run have ended; `wait` false: when a
// rebuild runs, `otherwise` answers at once instead.
export function withErasureLock<Result, Otherwise>(
  db: Database,
  { wait, onWait, otherwise }: { wait: boolean; onWait: () => void; otherwise: () => Otherwise },
  work: (held: HeldLock) => Promise<Result>,
): Promise<Result | Otherwise> {
  return withLock(db, ERASURE, { ...ERASING, wait, onWait, otherwise }, work)
}

// An import's staging table may hold an owner in the clear (docs/erasure.md): an erasure's last
// step, the owner's key deleted, takes this lock alone, so no import runs while it commits; each
// import holds it shared, with its staging table's lock (locks/work-tables.ts), for as long as the
// table lives.
const IMPORTS = LOCKS.erasureOrImport

export const IMPORTING = {
  lock: { space: LOCK_SPACES[IMPORTS.space], name: IMPORTS.name, what: 'the import' },
  mode: IMPORTS.modes.imports,
}

// The lock alone, taken when no import runs; undefined at once when one does.
export function takeImportsOut(db: Database): Promise<HeldLock | undefined> {
  return takeLock(
    db,
    { space: LOCK_SPACES[IMPORTS.space], name: IMPORTS.name, what: "the erasure's last step" },
    {
      mode: IMPORTS.modes["an erasure's last step"],
      consequence: 'the erasure is pending; run it again',
      wait: false,
    },
  )
}
