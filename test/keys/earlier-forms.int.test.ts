import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import postgres from 'postgres'
import { EARLIER_WRAPPED_KEY_BYTES, newOwnerKey, unwrapOwnerKey } from '../../src/crypto/envelope.ts'
import { keyEncryptionKeyId, newKeyEncryptionKey } from '../../src/crypto/key-encryption-keys.ts'
import { openSealed, streamIdOf } from '../../src/crypto/sealing.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'

// The forms the database wrote while it held the keys (migrations 0006-0008, pgcrypto), made here
// by pgcrypto itself as those functions made them, are read by the service: a store written
// before keeps its keys, its events and its streams' ids.

let database: TestDatabase
let sql: postgres.Sql
beforeAll(async () => {
  database = await createTestDatabase('earlier_forms')
  sql = postgres(database.url, { max: 1, onnotice: () => {} })
  await sql`create extension if not exists pgcrypto`
})
afterAll(async () => {
  await sql?.end()
  await database?.drop()
})

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

test('given a key wrapped by pgcrypto in the earlier 52-byte form, when the service unwraps it, then it is the same key', async () => {
  const kek = newKeyEncryptionKey()
  const raw = newOwnerKey()
  const [row] = await sql<{ wrapped: Uint8Array }[]>`
    select decode(${keyEncryptionKeyId(kek)}, 'hex') || iv
           || encrypt_iv(decode(${hex(raw)}, 'hex'), decode(${hex(kek)}, 'hex'), iv, 'aes-cbc/pad:none') as wrapped
    from (select gen_random_bytes(16) as iv) as fresh`
  const wrapped = new Uint8Array(row?.wrapped ?? [])
  expect(wrapped.byteLength).toBe(EARLIER_WRAPPED_KEY_BYTES)
  expect(unwrapOwnerKey(wrapped, [newKeyEncryptionKey(), kek], 'any pseudonym')).toEqual(raw)
})

test('given a text sealed by pgcrypto in the earlier form, when the service opens it, then the text comes back', async () => {
  const key = newOwnerKey()
  const text = '{"id": "9007199254740993", "name": "Fern \u{1F33F}", "tag": null}'
  const [row] = await sql<{ sealed: string }[]>`
    select translate(encode(iv || encrypt_iv(convert_to(${text}, 'UTF8'), decode(${hex(key)}, 'hex'), iv, 'aes-cbc/pad:pkcs'),
                            'base64'), E'\n', '') as sealed
    from (select gen_random_bytes(16) as iv) as fresh`
  const place = { streamId: 'plant:any', streamVersion: 1 }
  expect(openSealed({ sealed: row?.sealed }, key, 'data', place)).toEqual({ text, bound: false })
})

test("given a plant id, when pgcrypto's HMAC names its stream as the database did, then the service names it the same", async () => {
  const key = newOwnerKey()
  const [row] = await sql<{ stream: string }[]>`
    select 'plant:' || encode(hmac(convert_to('-9223372036854775808', 'UTF8'), decode(${hex(key)}, 'hex'), 'sha256'), 'hex') as stream`
  expect(streamIdOf(-9223372036854775808n, key)).toBe(row?.stream ?? '')
})
