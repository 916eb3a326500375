import { Buffer } from 'node:buffer'
import { sql } from 'drizzle-orm'
import { unwrapOwnerKey, WRAPPED_KEY_BYTES } from '../crypto/envelope.ts'
import { keyEncryptionKeyId } from '../crypto/key-encryption-keys.ts'
import type { Keyring } from '../crypto/keyring.ts'
import { type Database, rowsOf } from '../database/database.ts'
import { ownerKeys } from '../event-log/schema.ts'

export type Rotated = { rewrapped: number; kept: number }

// Re-wraps, in the service, every stored key that is not in today's form under the first
// key-encryption key: those under another KEK, and those in the earlier 52-byte form whatever
// their KEK. A batch at a time, each a short transaction of its own, beside running writers: a
// batch's rows are locked (FOR UPDATE) while they are re-wrapped, which an append (it reads the key
// FOR SHARE) waits for, and the key itself never changes, only its wrapping. Done when no key is
// left to re-wrap. `kept`: the keys found already in today's form under the first KEK.
// The table is walked in pseudonym order, each batch from where the last one stopped: a batch that
// started from the first pseudonym again would pass over every key re-wrapped before it, a scan
// that grew with each batch (quadratic in the owners: hours at a million). A walk that re-wrapped
// something is followed by another, for keys written meanwhile under another KEK (an instance not
// given the new list yet); the walk that finds none ends it.
export async function rotateKeys(
  db: Database,
  keyring: Keyring,
  {
    batchSize = 1000,
    onBatch = (_progress: { rewrapped: number; total: number }) => {},
  }: { batchSize?: number; onBatch?: (progress: { rewrapped: number; total: number }) => void } = {},
): Promise<Rotated> {
  const [first] = keyring.keks
  if (!first) throw new Error('no key-encryption key to wrap with')
  const id = keyEncryptionKeyId(first)
  const [toRewrap] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from ${ownerKeys} where ${needsRewrap(id)}`),
  )
  const total = Number(toRewrap?.n ?? 0)
  let rewrapped = 0
  for (let walked = 1; walked > 0; ) {
    walked = 0
    for (let after = ''; ; ) {
      const { done, last } = await rewrapBatch(db, keyring, id, after, batchSize)
      if (last === undefined) break
      walked += done
      rewrapped += done
      after = last
      onBatch({ rewrapped, total: Math.max(total, rewrapped) })
    }
  }
  const [counted] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from ${ownerKeys}`))
  return { rewrapped, kept: (counted?.n ?? 0) - rewrapped }
}

// A stored key not in today's form under the KEK `id`.
const needsRewrap = (id: string) =>
  sql`(substr(key, 1, 4) <> decode(${id}, 'hex') or length(key) <> ${WRAPPED_KEY_BYTES})`

// Re-wraps the next `batchSize` keys to re-wrap after the pseudonym `after`; `last`: the last of
// them (undefined: none is left after `after`).
async function rewrapBatch(
  db: Database,
  keyring: Keyring,
  id: string,
  after: string,
  batchSize: number,
): Promise<{ done: number; last: string | undefined }> {
  return db.transaction(async (tx) => {
    const rows = rowsOf<{ pseudonym: string; key: string }>(
      await tx.execute(sql`
        select pseudonym, encode(key, 'base64') as key from ${ownerKeys}
        where pseudonym > ${after} and ${needsRewrap(id)}
        order by pseudonym limit ${batchSize} for update`),
    )
    const last = rows.at(-1)?.pseudonym
    if (last === undefined) return { done: 0, last }
    const rewrapped = rows.map(({ pseudonym, key }) => {
      const raw = unwrapOwnerKey(Buffer.from(key, 'base64'), keyring.keks, pseudonym)
      if ('missing' in raw) {
        throw new Error(`no key-encryption key with id ${raw.missing} is configured (KEY_ENCRYPTION_KEYS)`)
      }
      const wrapped = keyring.wrap({ pseudonym, raw })
      raw.fill(0)
      return { pseudonym, key: Buffer.from(wrapped).toString('base64') }
    })
    // The batch's range of the primary key bounds the update to an index scan: joined to the JSON
    // alone, the planner may scan the whole table for each batch.
    await tx.execute(sql`
      update ${ownerKeys} as k set key = decode(x.key, 'base64')
      from json_to_recordset(${JSON.stringify(rewrapped)}::json) as x(pseudonym text, key text)
      where k.pseudonym = x.pseudonym and k.pseudonym between ${rows[0]?.pseudonym} and ${last}`)
    return { done: rows.length, last }
  })
}
