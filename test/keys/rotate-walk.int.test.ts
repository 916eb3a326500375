import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { sql } from 'drizzle-orm'
import { keyEncryptionKeyId } from '../../src/crypto/key-encryption-keys.ts'
import { createKeyring, type Keyring } from '../../src/crypto/keyring.ts'
import { type Database, type DatabaseHandle, openPostgres, rowsOf } from '../../src/database/database.ts'
import { rotateKeys } from '../../src/keys/rotate-keys.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'

// `keys rotate` walks owner_keys once in pseudonym order: each batch goes on from the last one's
// pseudonym instead of passing again over the keys re-wrapped before it (a scan that grew with
// every batch: quadratic in the owners, hours at a million), and a key written behind the walk
// under the old key-encryption key is still re-wrapped.

const OLD = new Uint8Array(Buffer.alloc(32, 1))
const NEW = new Uint8Array(Buffer.alloc(32, 2))
const OWNERS = 5000
const BATCH = 50

let database: TestDatabase
let handle: DatabaseHandle
beforeAll(async () => {
  database = await createTestDatabase('rotate_walk')
  await migratePostgresDatabase(database.url, undefined, [OLD])
  // One connection: its statistics are the rotation's, flushed on demand.
  handle = openPostgres({ keys: [NEW, OLD], url: database.url, poolSize: 1, statementTimeoutMs: 60_000 })
})
afterAll(async () => {
  await handle?.close()
  await database?.drop()
})

async function storeKeys(db: Database, keyring: Keyring, owners: string[]): Promise<string[]> {
  const made = owners.map((owner) => ({ owner, ...keyring.make() }))
  await db.execute(sql`
    insert into owner_keys (pseudonym, owner, key)
    select x.pseudonym, x.owner, decode(x.key, 'base64')
    from json_to_recordset(${JSON.stringify(
      made.map(({ owner, pseudonym, wrapped }) => ({
        owner,
        pseudonym,
        key: Buffer.from(wrapped).toString('base64'),
      })),
    )}::json) as x(pseudonym text, owner text, key text)`)
  return made.map((key) => key.pseudonym)
}

// Rows of owner_keys read so far, by index or by a scan, as the server's statistics count them.
async function rowsRead(db: Database): Promise<number> {
  await db.execute(sql`select pg_stat_force_next_flush()`)
  const [row] = rowsOf<{ n: string }>(
    await db.execute(sql`select (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::text as n
      from pg_stat_user_tables where relname = 'owner_keys'`),
  )
  return Number(row?.n ?? 0)
}

async function wrappingIds(db: Database): Promise<string[]> {
  const rows = rowsOf<{ id: string }>(
    await db.execute(sql`select distinct encode(substr(key, 1, 4), 'hex') as id from owner_keys`),
  )
  return rows.map((row) => row.id)
}

test('given keys under an old key-encryption key, when they are rotated in small batches, then each key is read a bounded number of times, and one written behind the walk is re-wrapped too', async () => {
  // given
  const db = handle.db
  const old = createKeyring([OLD])
  const pseudonyms = await storeKeys(
    db,
    old,
    Array.from({ length: OWNERS }, (_, n) => `owner-${n}`),
  )
  const first = pseudonyms.toSorted()[0] as string
  const before = await rowsRead(db)
  // when: the first batch's update brings another owner's key, before the walk's cursor, under OLD
  let late = old.make()
  while (late.pseudonym >= first) late = old.make()
  await db.execute(
    sql.raw(`
    create function late_key() returns trigger language plpgsql as $$ begin
      insert into owner_keys (pseudonym, owner, key)
      values ('${late.pseudonym}', 'late owner', decode('${Buffer.from(late.wrapped).toString('hex')}', 'hex'))
      on conflict do nothing;
      return null;
    end $$;
    create trigger late_key after update on owner_keys for each statement execute function late_key()`),
  )
  const rotated = await rotateKeys(db, createKeyring([NEW, OLD]), { batchSize: BATCH })
  await db.execute(sql`drop trigger late_key on owner_keys`)
  const read = (await rowsRead(db)) - before
  // then: every key under NEW, the late one included
  expect(rotated).toEqual({ rewrapped: OWNERS + 1, kept: 0 })
  expect(await wrappingIds(db)).toEqual([keyEncryptionKeyId(NEW)])
  // A walk reads each key about once (and the counts, and the walk that finds nothing left, once
  // more each); starting every batch from the first pseudonym read OWNERS² / (2 × BATCH) = 250,000.
  expect(read).toBeLessThan(10 * OWNERS)
})
