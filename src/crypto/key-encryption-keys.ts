import { Buffer } from 'node:buffer'
import { createHash } from 'node:crypto'

// Key-encryption keys (KEKs, docs/keys.md): each owner's key is stored wrapped under one, and the
// database never stores a KEK. The first of the list wraps; all of them unwrap.
export type KeyEncryptionKeys = readonly Uint8Array[]

const KEK_BYTES = 32
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

// A list as KEY_ENCRYPTION_KEYS holds it: base64 keys of 32 bytes, comma-separated (spaces and
// line breaks around each ignored, so a file may hold one a line). The message of a bad value
// names the entry's place, never its text.
export function parseKeyEncryptionKeys(text: string): KeyEncryptionKeys | string {
  const entries = text
    .split(/[,\n]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  if (entries.length === 0) return 'holds no key'
  const keys: Uint8Array[] = []
  for (const [index, entry] of entries.entries()) {
    const bytes = BASE64.test(entry) ? Buffer.from(entry, 'base64') : undefined
    if (
      bytes?.byteLength !== KEK_BYTES ||
      bytes.toString('base64').replace(/=+$/, '') !== entry.replace(/=+$/, '')
    ) {
      return `entry ${index + 1} is not the base64 of 32 bytes (\`openssl rand -base64 32\` makes one)`
    }
    // The decoded buffer itself: a copy would leave these bytes behind where nothing overwrites them.
    keys.push(bytes)
  }
  return keys
}

export function formatKeyEncryptionKeys(keys: KeyEncryptionKeys): string {
  return keys.map((key) => Buffer.from(key).toString('base64')).join(',')
}

export function newKeyEncryptionKey(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(KEK_BYTES))
}

// A KEK's id, stored in front of each key it wraps: 4 bytes of a hash of it, in hex, which tells
// nothing of the KEK.
export function keyEncryptionKeyId(key: Uint8Array): string {
  return createHash('sha256')
    .update('plant-store key-encryption key id\0')
    .update(key)
    .digest('hex')
    .slice(0, 8)
}
