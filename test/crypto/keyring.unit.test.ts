import { expect, test } from 'bun:test'
import { newKeyEncryptionKey } from '../../src/crypto/key-encryption-keys.ts'
import { createKeyring } from '../../src/crypto/keyring.ts'

const isZeros = (bytes: Uint8Array) => bytes.every((byte) => byte === 0)

test('given an opened key, when the keyring forgets it, then its bytes are zeros and it opens again from its wrapped form', () => {
  const keyring = createKeyring([newKeyEncryptionKey()])
  const { pseudonym, wrapped, raw } = keyring.make()
  const kept = new Uint8Array(raw)
  expect(keyring.open({ pseudonym, wrapped })).toBe(raw)
  keyring.forget(pseudonym)
  expect(isZeros(raw)).toBe(true)
  expect(keyring.open({ pseudonym, wrapped })).toEqual(kept)
})

test('given more keys than the keyring keeps, when one more is opened, then the least recently used is zeroed', () => {
  const keyring = createKeyring([newKeyEncryptionKey()], { capacity: 2 })
  const first = keyring.make()
  const second = keyring.make()
  keyring.open(first)
  keyring.make()
  expect(isZeros(second.raw)).toBe(true)
  expect(isZeros(first.raw)).toBe(false)
})

test('given a key left unused, when its idle time has passed, then its bytes are zeros without any call', async () => {
  const keyring = createKeyring([newKeyEncryptionKey()], { idleMs: 150 })
  const used = keyring.make()
  const idle = keyring.make()
  for (let waited = 0; waited < 600; waited += 10) {
    keyring.open(used)
    await Bun.sleep(10)
  }
  expect(isZeros(idle.raw)).toBe(true)
  expect(isZeros(used.raw)).toBe(false)
})
