import { describe, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { createCipheriv, randomBytes } from 'node:crypto'
import {
  newOwnerKey,
  newPseudonym,
  unwrapOwnerKey,
  WRAPPED_KEY_BYTES,
  wrapOwnerKey,
  wrappingKeyId,
} from '../../src/crypto/envelope.ts'
import { keyEncryptionKeyId, newKeyEncryptionKey } from '../../src/crypto/key-encryption-keys.ts'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { openSealed, seal, streamIdOf } from '../../src/crypto/sealing.ts'

describe("an owner's key, wrapped", () => {
  const kek = newKeyEncryptionKey()
  const other = newKeyEncryptionKey()

  test('given a key wrapped under a KEK, when it is unwrapped with a list holding that KEK, then the same key comes back', () => {
    const raw = newOwnerKey()
    const pseudonym = newPseudonym()
    const wrapped = wrapOwnerKey(raw, kek, pseudonym)
    expect(wrapped.byteLength).toBe(WRAPPED_KEY_BYTES)
    expect(wrappingKeyId(wrapped)).toBe(keyEncryptionKeyId(kek))
    expect(unwrapOwnerKey(wrapped, [other, kek], pseudonym)).toEqual(raw)
  })

  test('given a wrapped key, when the list lacks its KEK, then the missing id is named and nothing opens', () => {
    const wrapped = wrapOwnerKey(newOwnerKey(), kek, newPseudonym())
    expect(unwrapOwnerKey(wrapped, [other], newPseudonym())).toEqual({ missing: keyEncryptionKeyId(kek) })
  })

  test("given a wrapped key, when it is moved to another owner's row or a byte is changed, then it does not open", () => {
    const pseudonym = newPseudonym()
    const wrapped = wrapOwnerKey(newOwnerKey(), kek, pseudonym)
    expect(() => unwrapOwnerKey(wrapped, [kek], newPseudonym())).toThrow()
    const altered = new Uint8Array(wrapped)
    altered[20] = (altered[20] ?? 0) ^ 1
    expect(() => unwrapOwnerKey(altered, [kek], pseudonym)).toThrow()
  })

  test('given a keyring, when it makes a key and opens it again from its wrapped bytes, then the keys match and a rotation wraps under the first', () => {
    const keyring = createKeyring([kek])
    const made = keyring.make()
    const again = createKeyring([other, kek])
    expect(again.open({ pseudonym: made.pseudonym, wrapped: made.wrapped })).toEqual(made.raw)
    expect(wrappingKeyId(again.wrap(made))).toBe(keyEncryptionKeyId(other))
  })
})

describe('a sealed text', () => {
  const key = newOwnerKey()

  const place = { streamId: `plant:${'a'.repeat(64)}`, streamVersion: 1 }
  const text = '{"id":"1","name":"Fern","tag":null}'

  test('given a text sealed as data, when it is opened, then the text comes back, and not as metadata', () => {
    const sealed = seal(text, key, 'data', place)
    expect(openSealed(sealed, key, 'data', place)).toEqual({ text, bound: true })
    expect(() => openSealed(sealed, key, 'metadata', place)).toThrow()
    expect(() => openSealed(sealed, newOwnerKey(), 'data', place)).toThrow()
  })

  test('given a text sealed for one event, when it is opened for another stream or version, then it does not open', () => {
    const sealed = seal(text, key, 'data', place)
    expect(() => openSealed(sealed, key, 'data', { ...place, streamId: `plant:${'b'.repeat(64)}` })).toThrow()
    expect(() => openSealed(sealed, key, 'data', { ...place, streamVersion: 2 })).toThrow()
  })

  test('given a text sealed in the earlier form, bound to its part alone, when it is opened, then it comes back as not bound', () => {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from('data'))
    const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
    const earlier = { gcm: Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64') }
    expect(openSealed(earlier, key, 'data', place)).toEqual({ text, bound: false })
    expect(() => openSealed(earlier, key, 'metadata', place)).toThrow()
  })

  test('given something that is no sealed form, when it is opened, then nothing is', () => {
    expect(openSealed({ id: '1' }, key, 'data', place)).toBeUndefined()
    expect(openSealed(null, key, 'data', place)).toBeUndefined()
  })

  test('given a plant id, when its stream is named, then it is the HMAC of the decimal id, the same for a bigint and its text', () => {
    const id = streamIdOf(9007199254740993n, key)
    expect(id).toMatch(/^plant:[0-9a-f]{64}$/)
    expect(streamIdOf('9007199254740993', key)).toBe(id)
    expect(streamIdOf('9007199254740993', newOwnerKey())).not.toBe(id)
    expect(Buffer.from(id.slice(6), 'hex').byteLength).toBe(32)
  })
})
