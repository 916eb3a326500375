import type { Database } from '../store/database.ts'
import { holdLock } from './work-tables.ts'

// An erasure's first step and a projection rebuild exclude each other (docs/erasure.md): a rebuild's
// table, filled before the erasure deleted the owner's rows, would bring them back at its swap.
// Rebuilds share the lock among themselves (two may run at once); an erasure's first step takes it
// alone, waiting for the rebuilds that run to finish.
const ERASURE_OR_REBUILD = 'erasure-or-rebuild'

export function holdRebuildLock<Result>(db: Database, work: () => Promise<Result>): Promise<Result> {
  return whileHolding(db, 'shared', work)
}

// `onWait`: called first when a rebuild runs and the erasure waits for it.
export function holdErasureLock<Result>(
  db: Database,
  work: () => Promise<Result>,
  onWait?: () => void,
): Promise<Result> {
  return whileHolding(db, 'exclusive', work, onWait)
}

async function whileHolding<Result>(
  db: Database,
  mode: 'shared' | 'exclusive',
  work: () => Promise<Result>,
  onWait?: () => void,
): Promise<Result> {
  const release = await holdLock(db, ERASURE_OR_REBUILD, mode, onWait)
  try {
    return await work()
  } finally {
    await release()
  }
}
