import { setTimeout as sleep } from 'node:timers/promises'
import { getTableName, sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import { type Database, rowsOf } from '../database/database.ts'

// Where a one-time rewrite of what an earlier version stored is (docs/erasure.md): the log's
// events sealed, batch by batch, then the table and its statistics rewritten, then the fence
// closed; the owners' keys wrapped ('wrap' to 'wrapped') likewise, before it.
export type UpgradeProgress = {
  step:
    | 'seal'
    | 'wait'
    | 'held'
    | 'vacuum'
    | 'analyze'
    | 'validate'
    | 'done'
    | 'wrap'
    | 'held keys'
    | 'vacuum keys'
    | 'wrapped'
  sealed: number
  total: number
}

export type UpgradeOptions = {
  batchSize?: number
  onProgress?: (progress: UpgradeProgress) => void
  // How long the table's rewrite waits for transactions that still see its old rows (see below).
  snapshotWaitMs?: number
}

type Step = UpgradeProgress['step']

// One rewrite: its table, the constraint that fences it, and what it says as it goes (a step left
// out is not said).
export type FencedRewrite = {
  table: PgTable
  constraint: string
  // How many rows are to be rewritten, and whether there is nothing worth a word: a new store's
  // table, which has no old row version to rewrite either.
  count: (db: Database) => Promise<{ total: number; quiet: boolean }>
  // Rewrites the next batch of at most `size` rows: how many; 0 once none is left.
  batch: (db: Database, size: number) => Promise<number>
  steps: { batch: Step; wait?: Step; held: Step; vacuum: Step; analyze?: Step; validate?: Step; done: Step }
}

const DEFAULT_BATCH_SIZE = 5000
const SNAPSHOT_POLL_MS = 200

// Rewrites, once, the rows an earlier version stored in a form this one no longer accepts. A
// migration added the fence, a constraint NOT VALID: it already refuses what an earlier version
// still running would write. Done is when it is validated; every later open costs that one
// catalogue lookup. Validation comes last so that a run that stops anywhere before it (crash,
// kill) is completed by the next open: the batches done are kept, the rest is done again. Run
// after the migrations, by a caller that holds the migration lock, on `db`, a single session
// (opening/migrate.ts): instances that start meanwhile wait for it. Returns whether there was
// anything to do.
export async function rewriteBehindFence(
  db: Database,
  rewrite: FencedRewrite,
  options: UpgradeOptions = {},
): Promise<boolean> {
  if (!(await fenceOpen(db, rewrite.table, rewrite.constraint))) return false
  const { batchSize = DEFAULT_BATCH_SIZE, snapshotWaitMs = 30_000 } = options
  const { total, quiet } = await rewrite.count(db)
  const { steps } = rewrite
  const onProgress = (quiet ? undefined : options.onProgress) ?? (() => {})
  let sealed = 0
  const say = (step: Step | undefined) => step && onProgress({ step, sealed, total })
  for (let done = await rewrite.batch(db, batchSize); done > 0; done = await rewrite.batch(db, batchSize)) {
    sealed += done
    say(steps.batch)
  }
  // The old row versions keep what was rewritten in the table's file until the table itself is
  // rewritten. VACUUM FULL copies the versions that a snapshot still open may see: one older than
  // the last batch (another session's transaction, a replica's with hot_standby_feedback) is
  // waited for, within a bound, and named otherwise. VACUUM cannot run in a transaction. A new
  // store has nothing to wait for or rewrite, whatever another database of the server keeps open.
  if (!quiet) {
    if (!(await snapshotsPassed(db, snapshotWaitMs, () => say(steps.wait)))) say(steps.held)
    say(steps.vacuum)
    await db.execute(sql`vacuum full ${rewrite.table}`)
    // The statistics would otherwise keep what was rewritten among the most common values.
    say(steps.analyze)
    await db.execute(sql`analyze ${rewrite.table}`)
  }
  say(steps.validate)
  await db.execute(
    sql`alter table ${rewrite.table} validate constraint ${sql.identifier(rewrite.constraint)}`,
  )
  say(steps.done)
  return true
}

// One line for a person watching a start.
export function describeUpgrade({ step, sealed, total }: UpgradeProgress): string {
  switch (step) {
    case 'seal':
      return `upgrading the log to the erasable form: ${sealed} of ${total} events sealed`
    case 'wait':
      return 'upgrading the log: waiting for transactions older than the sealing to end'
    case 'held':
      return 'upgrading the log: a transaction older than the sealing is still open; its plaintext row versions stay in the events file until VACUUM FULL events runs after it ends'
    case 'vacuum':
      return 'upgrading the log: rewriting the events table (VACUUM FULL)'
    case 'analyze':
      return 'upgrading the log: gathering its statistics again (ANALYZE)'
    case 'validate':
      return 'upgrading the log: validating the constraint events_erasable'
    case 'done':
      return `upgraded the log: ${sealed} events sealed`
    case 'wrap':
      return `wrapping the owners' keys under the key-encryption key: ${sealed} of ${total}`
    case 'held keys':
      return "wrapping the owners' keys: a transaction older than the wrapping is still open; raw keys stay in the owner_keys file until VACUUM FULL owner_keys runs after it ends"
    case 'vacuum keys':
      return "wrapping the owners' keys: rewriting owner_keys so that no raw key stays in its files (VACUUM FULL)"
    case 'wrapped':
      return `wrapped ${sealed} owners' keys under the key-encryption key`
  }
}

// Whether, within `waitMs`, no other session's snapshot, prepared transaction or replication slot
// is older than now (so than every batch); `waiting` is told once when one is. Sessions of every
// database count: with only this one's, the tests still found old versions copied now and then
// while other databases of the server were busy.
async function snapshotsPassed(db: Database, waitMs: number, waiting: () => void): Promise<boolean> {
  const [now] = rowsOf<{ xid: string }>(await db.execute(sql`select pg_current_xact_id()::text as xid`))
  const xid = now?.xid ?? '0'
  const deadline = Date.now() + waitMs
  for (let told = false; ; told = true) {
    const [row] = rowsOf<{ older: boolean }>(
      await db.execute(sql`select exists (select 1 from pg_stat_activity
          where pid <> pg_backend_pid() and age(backend_xmin) > age(${xid}::xid8::xid))
        or exists (select 1 from pg_prepared_xacts where age(transaction) > age(${xid}::xid8::xid))
        or exists (select 1 from pg_replication_slots where age(xmin) > age(${xid}::xid8::xid)) as older`),
    )
    if (row?.older !== true) return true
    if (Date.now() >= deadline) return false
    if (!told) waiting()
    await sleep(SNAPSHOT_POLL_MS)
  }
}

async function fenceOpen(db: Database, table: PgTable, constraint: string): Promise<boolean> {
  const [row] = rowsOf<{ open: boolean }>(
    await db.execute(sql`select exists (select 1 from pg_constraint
      where conrelid = ${getTableName(table)}::regclass and conname = ${constraint}
        and not convalidated) as open`),
  )
  return row?.open === true
}
