import { count } from 'drizzle-orm'
import { blockAppends } from '../store/append-lock.ts'
import type { Database, Executor } from '../store/database.ts'
import { LOG_START, type LogCursor, logHead, projectLogBatch } from '../store/event-log.ts'
import { projectInto } from '../store/event-store.ts'
import { type PlantsTable, plants } from '../store/schema.ts'
import { writeCheckpoint } from './checkpoints.ts'
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
// Each batch is one statement that applies the projection inside the database (projection.ts).
// Appends that land meanwhile are caught up in two passes: one without any lock, and the last
// few under the events table's exclusive lock, held only for that short tail and the swap.
export async function rebuildProjection(db: Database, options: RebuildOptions = {}): Promise<RebuildResult> {
  const {
    batchSize = 50_000,
    dryRun = false,
    onProgress = () => {},
    clock = () => performance.now(),
  } = options
  const started = clock()
  const { events: total } = await logHead(db)
  const progress = { events: 0, total, position: 0n }
  const copy = async (tx: Executor, table: PlantsTable, from: LogCursor, settled: boolean) => {
    for (let cursor = from; ; ) {
      const batch = await projectLogBatch(tx, cursor, batchSize, projectInto(table), { settled })
      if (batch.events === 0) return cursor
      if (batch.highest > progress.position) progress.position = batch.highest
      progress.events += batch.events
      progress.total = Math.max(progress.total, progress.events)
      onProgress({ events: progress.events, total: progress.total })
      cursor = batch.cursor
    }
  }
  const scratch = await createScratchTable(db)
  try {
    let cursor = await copy(db, scratch.table, LOG_START, true)
    await indexScratchTable(db, scratch)
    cursor = await copy(db, scratch.table, cursor, true)
    const outcome = await db.transaction(async (tx) => {
      await blockAppends(tx)
      // With the lock held every event is committed: the rest of the log can be read as it is.
      await copy(tx, scratch.table, cursor, false)
      const [rows] = await tx.select({ count: count() }).from(scratch.table)
      // A dry run compares under the lock, so both sides stand at the same point of the log.
      if (dryRun) return { plants: rows?.count ?? 0, diff: await diffProjection(tx, scratch.table, plants) }
      await swapIntoPlants(tx, scratch)
      await writeCheckpoint(tx, 'plants', progress.position)
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
  }
}
