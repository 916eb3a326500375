import { sql } from 'drizzle-orm'
import { type KeyEncryptionKeys, keyEncryptionKeyId } from '../keys/key-encryption-keys.ts'
import { Failure } from '../shared/errors.ts'
import { type Database, rowsOf } from '../store/database.ts'
import { ownerKeys } from './schema.ts'
import { snapshotsPassed, type UpgradeOptions } from './upgrade.ts'

const DEFAULT_BATCH_SIZE = 5000

// Wraps the owners' keys that a version before key-encryption keys stored raw, once, then rewrites
// the table so that the raw copies leave its live files, as the log's upgrade does (log/upgrade.ts),
// and closes the fence (owner_keys_wrapped, migration 0008, NOT VALID until then: it already
// refuses a raw key from an earlier version still running). Run after the migrations by the
// caller holding the migration lock, on a session given the key-encryption keys. A run stopped
// anywhere before the validation is completed by the next. Returns whether there was anything to do.
export async function wrapStoredKeys(db: Database, options: UpgradeOptions = {}): Promise<boolean> {
  if (!(await fenceOpen(db))) return false
  const { batchSize = DEFAULT_BATCH_SIZE, snapshotWaitMs = 30_000 } = options
  const [counted] = rowsOf<{ total: number }>(
    await db.execute(
      sql`select count(*)::int as total from ${ownerKeys} where length(${ownerKeys.key}) = 32`,
    ),
  )
  const total = counted?.total ?? 0
  const onProgress = (total === 0 ? undefined : options.onProgress) ?? (() => {})
  let sealed = 0
  for (;;) {
    const [row] = rowsOf<{ wrapped: number }>(
      await db.execute(sql`
        with batch as (
          select pseudonym from ${ownerKeys} where length(key) = 32 order by pseudonym limit ${batchSize} for update
        ), wrapped as (
          update ${ownerKeys} as k set key = plant_store_wrap(k.key) from batch
          where k.pseudonym = batch.pseudonym returning 1
        )
        select count(*)::int as wrapped from wrapped`),
    )
    if (!row || row.wrapped === 0) break
    sealed += row.wrapped
    onProgress({ step: 'wrap', sealed, total })
  }
  if (total > 0) {
    if (!(await snapshotsPassed(db, snapshotWaitMs, () => {})))
      onProgress({ step: 'held keys', sealed, total })
    onProgress({ step: 'vacuum keys', sealed, total })
    await db.execute(sql`vacuum full ${ownerKeys}`)
    await db.execute(sql`analyze ${ownerKeys}`)
  }
  await db.execute(sql`alter table ${ownerKeys} validate constraint owner_keys_wrapped`)
  onProgress({ step: 'wrapped', sealed, total })
  return true
}

// Stops a start whose key-encryption keys lack one that stored keys are wrapped under (dropped
// before `keys rotate` re-wrapped them): its owners could be neither read nor written.
export async function requireKeysCovered(db: Database, keys: KeyEncryptionKeys): Promise<void> {
  const known = new Set(keys.map(keyEncryptionKeyId))
  const rows = rowsOf<{ id: string; owners: number }>(
    await db.execute(sql`select encode(substr(${ownerKeys.key}, 1, 4), 'hex') as id, count(*)::int as owners
      from ${ownerKeys} where length(${ownerKeys.key}) = 52 group by 1 order by 1`),
  )
  const missing = rows.find((row) => !known.has(row.id))
  if (missing) {
    throw new Failure(
      'BAD_SETTING',
      `KEY_ENCRYPTION_KEYS lacks the key-encryption key ${missing.id}, under which ${missing.owners} owners' keys are wrapped: put it back after the first and run \`bun run cli keys rotate\` before dropping it`,
    )
  }
}

async function fenceOpen(db: Database): Promise<boolean> {
  const [row] = rowsOf<{ open: boolean }>(
    await db.execute(sql`select exists (select 1 from pg_constraint
      where conrelid = 'owner_keys'::regclass and conname = 'owner_keys_wrapped' and not convalidated) as open`),
  )
  return row?.open === true
}
