import { sql } from 'drizzle-orm'
import { type KeyEncryptionKeys, keyEncryptionKeyId } from '../keys/key-encryption-keys.ts'
import { type Database, rowsOf } from '../store/database.ts'
import { ownerKeys } from './schema.ts'

export type Rotated = { rewrapped: number; kept: number }

// Re-wraps every stored key that the first key-encryption key does not wrap, under it, a batch
// at a time, each batch a short transaction of its own, beside running writers: a key's row is
// locked while it is re-wrapped, which an append (it reads the key FOR SHARE) waits for, and the
// key itself never changes, only its wrapping. Done when no key is left under another KEK.
// `kept`: the keys under the first KEK found at the end.
export async function rotateKeys(
  db: Database,
  keys: KeyEncryptionKeys,
  { batchSize = 1000, onBatch = (_rewrapped: number) => {} } = {},
): Promise<Rotated> {
  const [first] = keys
  if (!first) throw new Error('no key-encryption key to wrap with')
  const id = keyEncryptionKeyId(first)
  let rewrapped = 0
  for (;;) {
    const [row] = rowsOf<{ n: number }>(
      await db.execute(sql`
        with batch as (
          select pseudonym from ${ownerKeys} where substr(key, 1, 4) <> decode(${id}, 'hex')
          order by pseudonym limit ${batchSize} for update
        ), rewrapped as (
          update ${ownerKeys} as k set key = plant_store_wrap(plant_store_unwrap(k.key)) from batch
          where k.pseudonym = batch.pseudonym returning 1
        )
        select count(*)::int as n from rewrapped`),
    )
    if (!row || row.n === 0) break
    rewrapped += row.n
    onBatch(rewrapped)
  }
  const [counted] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from ${ownerKeys}`))
  return { rewrapped, kept: (counted?.n ?? 0) - rewrapped }
}
