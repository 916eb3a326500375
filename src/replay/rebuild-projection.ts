import { count } from 'drizzle-orm'
import { projectEvents } from '../plants/projection.ts'
import { blockAppends } from '../store/append-lock.ts'
import type { Database, Executor } from '../store/database.ts'
import { LOG_START, type LogCursor, type LoggedEvent, logHead, readLog } from '../store/event-log.ts'
import { type PlantsTable, plants } from '../store/schema.ts'
import { dropCheckpoint, replaceCheckpoint } from './checkpoints.ts'
import { diffProjection, type ProjectionDiff } from './projection-diff.ts'
import { createScratchTable, dropScratchTable, indexScratchTable, swapIntoPlants } from './scratch-table.ts'

export type RebuildOptions = {
  batchSize?: number
  // Builds and compares with the live projection, then throws the result away.
  dryRun?: boolean
  onProgress?: (progress: { events: number; total: number }) => void
  clock?: () => number
}

export type RebuildResult = {
  events: number
  plants: number
  position: bigint
  seconds: number
  swapped: boolean
  // A dry run only: how the live projection differs from the rebuilt one (the fold of the log).
  diff?: ProjectionDiff
}

// Folds the whole log into a fresh table while the service keeps serving, then swaps it in.
// Appends that land meanwhile are caught up in two passes: one without any lock, and the last
// few under the append lock, held exclusively only for that short tail and the swap.
export async function rebuildProjection(db: Database, options: RebuildOptions = {}): Promise<RebuildResult> {
  const {
    batchSize = 10_000,
    dryRun = false,
    onProgress = () => {},
    clock = () => performance.now(),
  } = options
  const started = clock()
  const { events: total } = await logHead(db)
  const progress = { events: 0, total, position: 0n }
  const fold = async (tx: Executor, batch: LoggedEvent[], table: PlantsTable) => {
    await projectEvents(tx, batch, table)
    for (const event of batch) if (event.position > progress.position) progress.position = event.position
    progress.events += batch.length
    progress.total = Math.max(progress.total, progress.events)
    onProgress({ events: progress.events, total: progress.total })
  }
  const scratch = await createScratchTable(db)
  try {
    let cursor = await copySettledLog(db, scratch.table, LOG_START, batchSize, fold)
    await indexScratchTable(db, scratch)
    cursor = await copySettledLog(db, scratch.table, cursor, batchSize, fold)
    const outcome = await db.transaction(async (tx) => {
      await blockAppends(tx)
      // With the lock held every event is committed: the rest of the log can be read as it is.
      for (;;) {
        const batch = await readLog(tx, cursor, batchSize, { settled: false })
        const last = batch.at(-1)
        if (!last) break
        await fold(tx, batch, scratch.table)
        cursor = { transactionId: last.transactionId, position: last.position }
      }
      const [rows] = await tx.select({ count: count() }).from(scratch.table)
      // A dry run compares under the lock, so both sides stand at the same point of the log.
      if (dryRun) return { plants: rows?.count ?? 0, diff: await diffProjection(tx, scratch.table, plants) }
      await swapIntoPlants(tx, scratch)
      await replaceCheckpoint(tx, scratch.name, 'plants', progress.position)
      return { plants: rows?.count ?? 0, diff: undefined }
    })
    return {
      events: progress.events,
      plants: outcome.plants,
      position: progress.position,
      seconds: (clock() - started) / 1000,
      swapped: !dryRun,
      diff: outcome.diff,
    }
  } finally {
    await dropScratchTable(db, scratch)
    await dropCheckpoint(db, scratch.name)
  }
}

// Copies settled events until a batch comes back short. Reading the next batch overlaps writing
// the previous one; at most two batches are held, so memory stays flat.
async function copySettledLog(
  db: Database,
  table: PlantsTable,
  from: LogCursor,
  batchSize: number,
  fold: (tx: Executor, batch: LoggedEvent[], table: PlantsTable) => Promise<void>,
): Promise<LogCursor> {
  let cursor = from
  let writing: Promise<void> = Promise.resolve()
  for (;;) {
    const batch = await readLog(db, cursor, batchSize)
    await writing
    const last = batch.at(-1)
    if (!last) return cursor
    cursor = { transactionId: last.transactionId, position: last.position }
    writing = db.transaction((tx) => fold(tx, batch, table))
    // Awaited on the next turn; this only keeps a failure from counting as unhandled meanwhile.
    writing.catch(() => {})
    if (batch.length < batchSize) {
      await writing
      return cursor
    }
  }
}
