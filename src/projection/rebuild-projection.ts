import { sql } from 'drizzle-orm'
import { GiveWay, whileAppendsBlocked } from '../event-log/append-lock.ts'
import { holdRebuildLock } from '../event-log/maintenance-lock.ts'
import type { UnfitEvent } from '../event-log/opening.ts'
import { foldLog } from '../event-log/projection.ts'
import { countLogAfter, LOG_START, type LogCursor, logHead } from '../event-log/reading.ts'
import { plants, plantsTable, projectionCheckpoints } from '../event-log/schema.ts'
import { claimWorkTable, clearDeadWorkTables, workTableName } from '../event-log/work-tables.ts'
import type { Keyring } from '../keys/keyring.ts'
import type { Database, Executor } from '../store/database.ts'
import { bumpChangedOwners, ownersDiffering } from './changed-owners.ts'
import { diffProjection, type ProjectionDiff } from './verify-projection.ts'

// At most this many events are folded while creates wait for the swap.
const LOCKED_TAIL_LIMIT = 2_000

export type RebuildOptions = {
  batchSize?: number
  // Builds and compares with the live projection, then throws the result away.
  dryRun?: boolean
  onProgress?: (progress: { events: number; total: number }) => void
  // Each event that does not open or fit (event-log/opening.ts): it makes no row, and the
  // rebuild goes on.
  onUnfit?: (unfit: UnfitEvent) => void
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
// Each batch is read opened in the service, which holds the keys, and its rows written in one
// statement (event-log/projection.ts): one batch in memory, whatever the log's size.
// Appends that land meanwhile are caught up in two passes: one without any lock, and the last
// few under the events table's exclusive lock, held only for that short tail and the swap, and
// given up (then tried again) rather than waited for while it would hold creates back. The tables
// of rebuilds and imports that died are dropped first.
export function rebuildProjection(
  db: Database,
  keyring: Keyring,
  options: RebuildOptions = {},
): Promise<RebuildResult> {
  return holdRebuildLock(db, () => rebuild(db, keyring, options))
}

// Under the lock that keeps an erasure's first step out (event-log/maintenance-lock.ts).
async function rebuild(db: Database, keyring: Keyring, options: RebuildOptions): Promise<RebuildResult> {
  const {
    batchSize = 10_000,
    dryRun = false,
    onProgress = () => {},
    onUnfit,
    clock = () => performance.now(),
  } = options
  const started = clock()
  await clearDeadWorkTables(db)
  const { events: total } = await logHead(db)
  let events = 0
  let position = 0n
  // A table of the projection's shape under another name, filled while `plants` keeps serving.
  const name = workTableName('plants_rebuild_')
  const scratch = plantsTable(name)
  const key = (suffix: string) => sql.identifier(`${name}_${suffix}`)
  const copy = async (tx: Executor, from: LogCursor, settled: boolean) => {
    const folded = await foldLog(tx, keyring, scratch, from, batchSize, {
      settled,
      onUnfit,
      onBatch: (batch) => {
        if (batch.highest > position) position = batch.highest
        events += batch.events
        onProgress({ events, total: Math.max(total, events) })
      },
    })
    return folded.cursor
  }
  const release = await claimWorkTable(db, name)
  try {
    await db.execute(sql`create table ${scratch} (like plants including defaults)`)
    let cursor = await copy(db, LOG_START, true)
    // The keys the migrations gave `plants`, added after the bulk fill (faster than maintaining them
    // row by row) and given their names on the swap, so the next migration or rebuild finds what it
    // expects (test/projection/rebuild.int.test.ts compares the two).
    await db.execute(sql`alter table ${scratch} add constraint ${key('owner_id_pk')} primary key (owner, id)`)
    await db.execute(sql`create index ${key('owner_position')} on ${scratch} (owner, position)`)
    cursor = await copy(db, cursor, true)
    // Owners whose rows differ now, compared without the lock; under it, only they and the owners of
    // events after `compared` are compared again.
    const compared = cursor
    const differing = dryRun ? [] : await ownersDiffering(db, scratch)
    // What the scratch table holds before each attempt: a failed attempt's tail is rolled back.
    let before = { events, position }
    const catchUp = async () => {
      ;({ events, position } = before)
      cursor = await copy(db, cursor, true)
      before = { events, position }
    }
    const outcome = await whileAppendsBlocked(
      db,
      async (tx) => {
        // A long tail (an import committed just now) is copied without the lock first.
        if ((await countLogAfter(tx, cursor)) > LOCKED_TAIL_LIMIT) throw new GiveWay()
        // With the lock held every event is committed: the rest of the log can be read as it is.
        await copy(tx, cursor, false)
        const rows = await tx.$count(scratch)
        // A dry run compares under the lock, so both sides stand at the same point of the log.
        if (dryRun) return { plants: rows, diff: await diffProjection(tx, scratch, plants) }
        await bumpChangedOwners(tx, scratch, differing, compared)
        // Readers queue for the moment the DDL takes, then find the new table under the old name.
        await tx.execute(sql`drop table plants`)
        await tx.execute(sql`alter table ${scratch} rename to plants`)
        for (const suffix of ['owner_id_pk', 'owner_position']) {
          await tx.execute(sql`alter index ${key(suffix)} rename to ${sql.identifier(`plants_${suffix}`)}`)
        }
        await tx
          .insert(projectionCheckpoints)
          .values({ projection: 'plants', position })
          .onConflictDoUpdate({ target: projectionCheckpoints.projection, set: { position } })
        return { plants: rows, diff: undefined }
      },
      { beforeRetry: catchUp },
    )
    return { events, position, seconds: (clock() - started) / 1000, swapped: !dryRun, ...outcome }
  } finally {
    await db.execute(sql`drop table if exists ${scratch}`)
    await release()
  }
}
