import { Buffer } from 'node:buffer'
import { sql } from 'drizzle-orm'
import { unwrapOwnerKey, WRAPPED_KEY_BYTES } from '../keys/envelope.ts'
import { keyEncryptionKeyId } from '../keys/key-encryption-keys.ts'
import type { Keyring } from '../keys/keyring.ts'
import { type Database, rowsOf } from '../store/database.ts'
import { ownerKeys } from './schema.ts'

export type Rotated = { rewrapped: number; kept: number }

// Re-wraps, in the service, every stored key that is not in today's form under the first
// key-encryption key: those under another KEK, and those in the earlier 52-byte form whatever
// their KEK. A batch at a time, each a short transaction of its own, beside running writers: a
// batch's rows are locked (FOR UPDATE) while they are re-wrapped, which an append (it reads the key
// FOR SHARE) waits for, and the key itself never changes, only its wrapping. Done when no key is
// left to re-wrap. `kept`: the keys found already in today's form under the first KEK.
export async function rotateKeys(
  db: Database,
  keyring: Keyring,
  { batchSize = 1000, onBatch = (_rewrapped: number) => {} } = {},
): Promise<Rotated> {
  const [first] = keyring.keks
  if (!first) throw new Error('no key-encryption key to wrap with')
  const id = keyEncryptionKeyId(first)
  let rewrapped = 0
  for (;;) {
    const done = await rewrapBatch(db, keyring, id, batchSize)
    if (done === 0) break
    rewrapped += done
    onBatch(rewrapped)
  }
  const [counted] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from ${ownerKeys}`))
  return { rewrapped, kept: (counted?.n ?? 0) - rewrapped }
}

async function rewrapBatch(db: Database, keyring: Keyring, id: string, batchSize: number): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = rowsOf<{ pseudonym: string; key: string }>(
      await tx.execute(sql`
        select pseudonym, encode(key, 'base64') as key from ${ownerKeys}
        where substr(key, 1, 4) <> decode(${id}, 'hex') or length(key) <> ${WRAPPED_KEY_BYTES}
        order by pseudonym limit ${batchSize} for update`),
    )
    if (rows.length === 0) return 0
    const rewrapped = rows.map(({ pseudonym, key }) => {
      const raw = unwrapOwnerKey(Buffer.from(key, 'base64'), keyring.keks, pseudonym)
      if ('missing' in raw) {
        throw new Error(`no key-encryption key with id ${raw.missing} is configured (KEY_ENCRYPTION_KEYS)`)
      }
      const wrapped = keyring.wrap({ pseudonym, raw })
      raw.fill(0)
      return { pseudonym, key: Buffer.from(wrapped).toString('base64') }
    })
    await tx.execute(sql`
      update ${ownerKeys} as k set key = decode(x.key, 'base64')
      from json_to_recordset(${JSON.stringify(rewrapped)}::json) as x(pseudonym text, key text)
      where k.pseudonym = x.pseudonym`)
    return rows.length
  })
}
