import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import type { Keyring } from '../keys/keyring.ts'
import { type Database, rowsOf } from '../store/database.ts'
import { events } from './schema.ts'
import { sealPlaintextBatch } from './seal-plaintext.ts'

// Where the upgrade of a log written before erasure is (docs/erasure.md): sealing its events, batch
// by batch, then rewriting the table and its statistics, then closing the fence.
export type UpgradeProgress = {
  // 'wrap' to 'wrapped': the owners' keys of a version before key-encryption keys (wrap-stored-keys.ts).
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
  // How long the rewrite waits for transactions that still see the plaintext (see below).
  snapshotWaitMs?: number
}

const DEFAULT_BATCH_SIZE = 5000
const SNAPSHOT_POLL_MS = 200

// Seals the events an earlier version wrote in plaintext, once, in the service (seal-plaintext.ts): the only time the log is
// rewritten. Run after the migrations, by a caller that holds the migration lock, on `db`, a single
// session (migrate.ts): instances that start meanwhile wait for it, and none serves before it is
// done. Done is when the constraint events_erasable (migration 0006, NOT VALID: it already refuses
// the plaintext inserts of an earlier version still running) is validated; every later open costs
// that one catalogue lookup. Validation comes last so that a run that stops anywhere before it
// (crash, kill) is completed by the next open: the sealed batches are kept, the rest is done again.
// Returns whether there was anything to do.
export async function upgradeLog(
  db: Database,
  keyring: Keyring,
  options: UpgradeOptions = {},
): Promise<boolean> {
  if (!(await fenceOpen(db))) return false
  const { batchSize = DEFAULT_BATCH_SIZE, snapshotWaitMs = 30_000 } = options
  const { total, empty } = await countPlaintext(db)
  // A new store (the fence open, no event yet) has nothing worth a word.
  const onProgress = (empty ? undefined : options.onProgress) ?? (() => {})
  let sealed = 0
  let after = 0n
  for (;;) {
    const batch = await sealPlaintextBatch(db, keyring, after, batchSize)
    if (batch === undefined) break
    sealed += batch.sealed
    after = batch.last
    onProgress({ step: 'seal', sealed, total })
  }
  // The old row versions keep the plaintext in the table's file until it is rewritten. VACUUM
  // FULL copies the versions that a snapshot still open may see: one older than the last batch
  // (another session's transaction, a replica's with hot_standby_feedback) is waited for, within
  // a bound, and named otherwise. VACUUM cannot run in a transaction. A table whose file is empty
  // never held a row (nor its indexes an entry): a new store has nothing to wait for or rewrite,
  // whatever another database of the server keeps open.
  if (!(await neverWritten(db)))
    await rewriteEvents(db, snapshotWaitMs, (step) => onProgress({ step, sealed, total }))
  onProgress({ step: 'validate', sealed, total })
  await db.execute(sql`alter table ${events} validate constraint events_erasable`)
  onProgress({ step: 'done', sealed, total })
  return true
}

async function rewriteEvents(
  db: Database,
  snapshotWaitMs: number,
  onStep: (step: UpgradeProgress['step']) => void,
) {
  if (!(await snapshotsPassed(db, snapshotWaitMs, () => onStep('wait')))) {
    onStep('held')
  }
  onStep('vacuum')
  await db.execute(sql`vacuum full ${events}`)
  // The statistics would otherwise keep subjects, names and ids among the most common values.
  onStep('analyze')
  await db.execute(sql`analyze ${events}`)
}

async function neverWritten(db: Database): Promise<boolean> {
  const [row] = rowsOf<{ empty: boolean }>(
    await db.execute(sql`select pg_relation_size('events') = 0 as empty`),
  )
  return row?.empty === true
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
// is older than now (so than every sealing batch); `waiting` is told once when one is. Sessions of
// every database count: with only this one's, the tests still found old versions copied now and
// then while other databases of the server were busy.
export async function snapshotsPassed(db: Database, waitMs: number, waiting: () => void): Promise<boolean> {
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

async function fenceOpen(db: Database): Promise<boolean> {
  const [row] = rowsOf<{ open: boolean }>(
    await db.execute(sql`select exists (select 1 from pg_constraint
      where conrelid = 'events'::regclass and conname = 'events_erasable' and not convalidated) as open`),
  )
  return row?.open === true
}

async function countPlaintext(db: Database): Promise<{ total: number; empty: boolean }> {
  const [row] = rowsOf<{ total: number; empty: boolean }>(
    await db.execute(sql`select count(*) filter (where not (${events.metadata} ? 'pseudonym'))::int as total,
      count(*) = 0 as empty from ${events}`),
  )
  return { total: row?.total ?? 0, empty: row?.empty ?? true }
}
