import { sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import type { Database, Executor } from '../database/database.ts'
import { foldLog } from '../event-log/plant-rows.ts'
import { countLogAfter, LOG_START, type LogCursor, logHead } from '../event-log/reading.ts'
import {
  events as eventLog,
  events,
  ownerKeys,
  type PlantsTable,
  plants,
  plantsTable,
  projectionCheckpoints,
} from '../event-log/schema.ts'
import type { UnfitEvent } from '../event-log/sealed-parts.ts'
import type { HeldLock } from '../locks/advisory-lock.ts'
import { GiveWay, whileAppendsBlocked } from '../locks/append-lock.ts'
import { withRebuildLock } from '../locks/maintenance-lock.ts'
import { claimWorkTable, clearDeadWorkTables, workTableName } from '../locks/work-tables.ts'
import { bumpChangedOwners, ownersDiffering } from './changed-owners.ts'
import type { ProjectionDiff } from './projection-diff.ts'
import { diffProjection } from './verify-projection.ts'

// At most this many events are folded while creates wait for the swap.
const LOCKED_TAIL_LIMIT = 2_000

export type RebuildOptions = {
  batchSize?: number
  // Builds and compares with the live projection, then throws the result away.
  dryRun?: boolean
  onProgress?: (progress: { events: number; total: number }) => void
  // Each event that does not open or fit (event-log/sealed-parts.ts): it makes no row, and the
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
// statement (event-log/plant-rows.ts): one batch in memory, whatever the log's size.
// Appends that land meanwhile are caught up in two passes: one without any lock, and the last
// few under the events table's exclusive lock, held only for that short tail and the swap, and
// given up (then tried again) rather than waited for while it would hold creates back. The tables
// of rebuilds and imports that died are dropped first. The swap is fenced: it runs in the
// transaction of the lock that keeps an erasure's first step out (locks/maintenance-lock.ts),
// and commits with it, or, that lock lost, not at all (LOCK_LOST).
export async function rebuildProjection(
  db: Database,
  keyring: Keyring,
  options: RebuildOptions = {},
): Promise<RebuildResult> {
  const name = workTableName('plants_rebuild_')
  let table: HeldLock | undefined
  try {
    return await withRebuildLock(db, async (lock) => {
      table = await claimWorkTable(db, name, 'nothing was swapped; run it again')
      return rebuild(db, lock.fenced, table, name, keyring, options)
    })
  } finally {
    // After the lock's transaction ends: until then the swap it holds would make this wait for it.
    await db.execute(sql`drop table if exists ${sql.identifier(name)}`).catch(() => {})
    await table?.abandon()
  }
}

// `fenced`: the rebuild lock's transaction, where the swap is made.
async function rebuild(
  db: Database,
  fenced: Database,
  table: HeldLock,
  name: string,
  keyring: Keyring,
  options: RebuildOptions,
): Promise<RebuildResult> {
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
  // The table's own lock lost, another command may have dropped it as a dead run's.
  await table.prove()
  const outcome = await whileAppendsBlocked(
    fenced,
    eventLog,
    async (tx) => {
      // A long tail (an import committed just now) is copied without the lock first.
      if ((await countLogAfter(tx, cursor)) > LOCKED_TAIL_LIMIT) throw new GiveWay()
      // With the lock held every event is committed: the rest of the log can be read as it is.
      await copy(tx, cursor, false)
      const rows = await tx.$count(scratch)
      // A dry run compares under the lock, so both sides stand at the same point of the log.
      if (dryRun) return { plants: rows, diff: await diffProjection(tx, scratch, plants) }
      await withoutErasingOwners(tx, scratch)
      await bumpChangedOwners(tx, scratch, differing, compared)
      await swapIn(tx, name, position)
      return { plants: rows, diff: undefined }
    },
    { beforeRetry: catchUp },
  )
  return { events, position, seconds: (clock() - started) / 1000, swapped: !dryRun, ...outcome }
}

// The scratch table `name`, filled to `position`, becomes `plants` with the indexes' names the
// migrations gave it. Readers queue for the moment the DDL takes, then find the new table under the
// old name.
async function swapIn(tx: Executor, name: string, position: bigint): Promise<void> {
  await tx.execute(sql`drop table plants`)
  await tx.execute(sql`alter table ${sql.identifier(name)} rename to plants`)
  for (const suffix of ['owner_id_pk', 'owner_position']) {
    await tx.execute(
      sql`alter index ${sql.identifier(`${name}_${suffix}`)} rename to ${sql.identifier(`plants_${suffix}`)}`,
    )
  }
  await tx
    .insert(projectionCheckpoints)
    .values({ projection: 'plants', position })
    .onConflictDoUpdate({ target: projectionCheckpoints.projection, set: { position } })
}

// Defence in depth, should a fence ever fail: the rows of an owner whose erasure has begun, folded
// before it did, are not installed (the fold opens no PlantCreated under a key being erased, and
// the erasure deleted the owner's rows from `plants`). Few keys are being erased at any time: the
// rows are found by the owner's index and the event's position.
async function withoutErasingOwners(tx: Executor, scratch: PlantsTable): Promise<void> {
  await tx.execute(sql`delete from ${scratch} as s using ${ownerKeys} as k, ${events} as e
    where k.erasing and s.owner = k.owner and e.position = s.position
      and e.metadata->>'pseudonym' = k.pseudonym`)
}
