import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import { type Database, rowsOf } from '../store/database.ts'
import { events, ownerKeys } from './schema.ts'
import { newWrappedKey, unwrappedKey } from './sealing.ts'

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

// Seals the events an earlier version wrote in plaintext, once: the only time the log is
// rewritten. Run after the migrations, by a caller that holds the migration lock on `db`, a single
// session (migrate.ts): instances that start meanwhile wait for it, and none serves before it is
// done. Done is when the constraint events_erasable (migration 0006, NOT VALID: it already refuses
// the plaintext inserts of an earlier version still running) is validated; every later open costs
// that one catalogue lookup. Validation comes last so that a run that stops anywhere before it
// (crash, kill) is completed by the next open: the sealed batches are kept, the rest is done again.
// Returns whether there was anything to do.
export async function upgradeLog(db: Database, options: UpgradeOptions = {}): Promise<boolean> {
  if (!(await fenceOpen(db))) return false
  const { batchSize = DEFAULT_BATCH_SIZE, snapshotWaitMs = 30_000 } = options
  const { total, empty } = await countPlaintext(db)
  // A new store (the fence open, no event yet) has nothing worth a word.
  const onProgress = (empty ? undefined : options.onProgress) ?? (() => {})
  let sealed = 0
  let after = 0n
  for (;;) {
    const batch = await sealBatch(db, after, batchSize)
    if (batch === undefined) break
    sealed += batch.sealed
    after = batch.last
    onProgress({ step: 'seal', sealed, total })
  }
  // The old row versions keep the plaintext in the table's file until it is rewritten. VACUUM
  // FULL copies the versions that a snapshot still open may see: one older than the last batch
  // (another session's transaction, a replica's with hot_standby_feedback) is waited for, within
  // a bound, and named otherwise. VACUUM cannot run in a transaction.
  if (!(await snapshotsPassed(db, snapshotWaitMs, () => onProgress({ step: 'wait', sealed, total })))) {
    onProgress({ step: 'held', sealed, total })
  }
  onProgress({ step: 'vacuum', sealed, total })
  await db.execute(sql`vacuum full ${events}`)
  // The statistics would otherwise keep subjects, names and ids among the most common values.
  onProgress({ step: 'analyze', sealed, total })
  await db.execute(sql`analyze ${events}`)
  onProgress({ step: 'validate', sealed, total })
  await db.execute(sql`alter table ${events} validate constraint events_erasable`)
  onProgress({ step: 'done', sealed, total })
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

// Seals the next `size` plaintext events after position `after`, in one transaction: each owner's
// key found or made (the subject was metadata.owner), the stream id recomputed from the plant id
// (as upcast: v0 named it plantId), the data sealed as stored (a v0 event stays v0 inside) and the
// request id sealed in the metadata beside the pseudonym. The append-only trigger is off only
// inside this transaction: ALTER TABLE is transactional, so no other session ever sees it off.
// Undefined when none is left.
async function sealBatch(
  db: Database,
  after: bigint,
  size: number,
): Promise<{ sealed: number; last: bigint } | undefined> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`alter table ${events} disable trigger events_no_update_or_delete`)
    const [row] = rowsOf<{ selected: number; sealed: number; last: string | null }>(
      await tx.execute(sql`
        with batch as (
          select position, type, schema_version, data, metadata from ${events}
          where position > ${after.toString()}::bigint and not (metadata ? 'pseudonym')
          order by position limit ${size}
        ), owners as (
          select distinct metadata->>'owner' as owner from batch where metadata->>'owner' is not null
        ), found as (
          select k.pseudonym, k.owner, k.key from ${ownerKeys} as k
          where k.owner in (select owner from owners) and not k.erasing
        ), made as (
          insert into ${ownerKeys} (pseudonym, owner, key)
          select encode(gen_random_bytes(16), 'hex'), owners.owner, ${newWrappedKey} from owners
          where not exists (select 1 from found where found.owner = owners.owner)
          on conflict (owner) where not erasing do update set owner = excluded.owner
          returning pseudonym, owner, key
        ), keys as (
          select pseudonym, owner, ${unwrappedKey(sql`key`)} as key from (select * from found union all select * from made) as stored
        ), sealed as (
          update ${events} as e set
            stream_id = plant_store_stream_id(plant.id::text, keys.key),
            data = jsonb_build_object('sealed', plant_store_seal(batch.data::text, keys.key)),
            metadata = jsonb_build_object('pseudonym', keys.pseudonym, 'sealed',
              plant_store_seal(jsonb_build_object('requestId', batch.metadata->>'requestId')::text, keys.key))
          from batch
          join keys on keys.owner = batch.metadata->>'owner'
          cross join lateral plant_store_event(batch.type, batch.schema_version, batch.data, batch.position) as plant
          where e.position = batch.position
          returning e.position
        )
        select (select count(*)::int from batch) as selected, (select count(*)::int from sealed) as sealed,
               (select max(position)::text from batch) as last`),
    )
    await tx.execute(sql`alter table ${events} enable trigger events_no_update_or_delete`)
    if (!row || row.last === null) return undefined
    if (row.sealed !== row.selected) {
      throw new Error(
        `the log upgrade found an event without an owner after position ${after}: nothing sealed`,
      )
    }
    return { sealed: row.sealed, last: BigInt(row.last) }
  })
}
