import { Buffer } from 'node:buffer'
import { sql } from 'drizzle-orm'
import { EARLIER_WRAPPED_KEY_BYTES, unwrapOwnerKey, WRAPPED_KEY_BYTES } from '../crypto/envelope.ts'
import type { Keyring } from '../crypto/keyring.ts'
import { type Database, rowsOf } from '../database/database.ts'
import { ownerKeys } from '../event-log/schema.ts'
import { Failure } from '../shared/errors.ts'
import { rewriteBehindFence, type UpgradeOptions } from './fenced-rewrite.ts'

// Wraps the owners' keys that a version before key-encryption keys stored raw, once, behind the
// fence owner_keys_wrapped (migration 0008: it already refuses a raw key from an earlier version
// still running), as the log's upgrade seals its events (log-upgrade.ts). Each key is wrapped in the
// service, in today's form, under the keyring's first key-encryption key. Returns whether there
// was anything to do.
export async function wrapStoredKeys(
  db: Database,
  keyring: Keyring,
  options: UpgradeOptions = {},
): Promise<boolean> {
  return rewriteBehindFence(
    db,
    {
      table: ownerKeys,
      constraint: 'owner_keys_wrapped',
      count: countRawKeys,
      batch: (db, size) => wrapBatch(db, keyring, size),
      steps: { batch: 'wrap', held: 'held keys', vacuum: 'vacuum keys', done: 'wrapped' },
    },
    options,
  )
}

async function countRawKeys(db: Database): Promise<{ total: number; quiet: boolean }> {
  const [counted] = rowsOf<{ total: number }>(
    await db.execute(
      sql`select count(*)::int as total from ${ownerKeys} where length(${ownerKeys.key}) = 32`,
    ),
  )
  const total = counted?.total ?? 0
  return { total, quiet: total === 0 }
}

// A batch of raw keys, locked, wrapped here, written back: how many.
async function wrapBatch(db: Database, keyring: Keyring, batchSize: number): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = rowsOf<{ pseudonym: string; key: string }>(
      await tx.execute(sql`
        select pseudonym, encode(key, 'base64') as key from ${ownerKeys}
        where length(key) = 32 order by pseudonym limit ${batchSize} for update`),
    )
    if (rows.length === 0) return 0
    const wrapped = rows.map(({ pseudonym, key }) => {
      const raw = Buffer.from(key, 'base64')
      const sealed = keyring.wrap({ pseudonym, raw })
      raw.fill(0)
      return { pseudonym, key: Buffer.from(sealed).toString('base64') }
    })
    await tx.execute(sql`
      update ${ownerKeys} as k set key = decode(x.key, 'base64')
      from json_to_recordset(${JSON.stringify(wrapped)}::json) as x(pseudonym text, key text)
      where k.pseudonym = x.pseudonym`)
    return rows.length
  })
}

// Stops a start whose key-encryption keys cannot open the stored keys: one lacks a KEK that keys
// are wrapped under (dropped before \`keys rotate\` re-wrapped them), or holds another key under
// the same id. One key of each KEK id, in either form, is unwrapped to tell.
export async function requireKeysCovered(db: Database, keyring: Keyring): Promise<void> {
  const rows = rowsOf<{ id: string; owners: number; pseudonym: string; key: string }>(
    await db.execute(sql`
      select encode(substr(${ownerKeys.key}, 1, 4), 'hex') as id, count(*)::int as owners,
             min(${ownerKeys.pseudonym}) as pseudonym,
             (select encode(k.key, 'base64') from ${ownerKeys} as k
              where k.pseudonym = min(${ownerKeys.pseudonym})) as key
      from ${ownerKeys} where length(${ownerKeys.key}) in (${EARLIER_WRAPPED_KEY_BYTES}, ${WRAPPED_KEY_BYTES})
      group by 1 order by 1`),
  )
  for (const row of rows) {
    const opened = openOne(keyring, row.pseudonym, row.key)
    if (opened === 'missing') {
      throw new Failure(
        'BAD_SETTING',
        `KEY_ENCRYPTION_KEYS lacks the key-encryption key ${row.id}, under which ${row.owners} owners' keys are wrapped: put it back after the first and run \`bun run cli keys rotate\` before dropping it`,
      )
    }
    if (opened === 'wrong') {
      throw new Failure(
        'BAD_SETTING',
        `KEY_ENCRYPTION_KEYS holds a key with id ${row.id} that does not open the ${row.owners} owners' keys wrapped under that id: it is not the key they were wrapped with`,
      )
    }
  }
}

function openOne(keyring: Keyring, pseudonym: string, key: string): 'opened' | 'missing' | 'wrong' {
  try {
    const raw = unwrapOwnerKey(Buffer.from(key, 'base64'), keyring.keks, pseudonym)
    if ('missing' in raw) return 'missing'
    // Opened only to see that it opens: no copy is left behind (docs/keys.md).
    raw.fill(0)
    return 'opened'
  } catch {
    return 'wrong'
  }
}
