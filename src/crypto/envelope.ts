import { Buffer } from 'node:buffer'
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { type KeyEncryptionKeys, keyEncryptionKeyId } from './key-encryption-keys.ts'

// Envelope encryption (docs/keys.md): each owner's key is stored wrapped under a key-encryption key
// (KEK) that only the service holds. A wrapped key names its KEK by a 4-byte id in front.
// - Today's form, 64 bytes: the id, a 12-byte IV, the 32-byte key under AES-256-GCM and its 16-byte
//   tag, authenticated with the owner's pseudonym, so that a key moved to another owner's row, or
//   altered, does not open.
// - The earlier form, 52 bytes: the id, a 16-byte IV, the key under AES-256-CBC (no tag). Read, never
//   written; `keys rotate` re-wraps it in today's form.
export const OWNER_KEY_BYTES = 32
export const WRAPPED_KEY_BYTES = 64
export const EARLIER_WRAPPED_KEY_BYTES = 52
const ID_BYTES = 4
const IV_BYTES = 12
const TAG_BYTES = 16

export function wrapOwnerKey(raw: Uint8Array, kek: Uint8Array, pseudonym: string): Uint8Array {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', kek, iv).setAAD(Buffer.from(pseudonym, 'utf8'))
  const sealed = Buffer.concat([cipher.update(raw), cipher.final()])
  const id = Buffer.from(keyEncryptionKeyId(kek), 'hex')
  return new Uint8Array(Buffer.concat([id, iv, sealed, cipher.getAuthTag()]))
}

// The id, in hex, of the KEK `wrapped` is under.
export function wrappingKeyId(wrapped: Uint8Array): string {
  return Buffer.from(wrapped.subarray(0, ID_BYTES)).toString('hex')
}

// The raw key of `wrapped`; `missing`, the id of its KEK, when none of `keks` is that KEK. Throws
// when the key does not open (altered, or another owner's).
export function unwrapOwnerKey(
  wrapped: Uint8Array,
  keks: KeyEncryptionKeys,
  pseudonym: string,
): Uint8Array | { missing: string } {
  const id = wrappingKeyId(wrapped)
  const kek = keks.find((key) => keyEncryptionKeyId(key) === id)
  if (!kek) return { missing: id }
  if (wrapped.byteLength === EARLIER_WRAPPED_KEY_BYTES) {
    const iv = wrapped.subarray(ID_BYTES, ID_BYTES + 16)
    const decipher = createDecipheriv('aes-256-cbc', kek, iv).setAutoPadding(false)
    return ownOutput(decipher.update(wrapped.subarray(ID_BYTES + 16)), decipher.final())
  }
  if (wrapped.byteLength !== WRAPPED_KEY_BYTES)
    throw new Error(`a wrapped key of ${wrapped.byteLength} bytes`)
  const iv = wrapped.subarray(ID_BYTES, ID_BYTES + IV_BYTES)
  const decipher = createDecipheriv('aes-256-gcm', kek, iv).setAAD(Buffer.from(pseudonym, 'utf8'))
  decipher.setAuthTag(wrapped.subarray(WRAPPED_KEY_BYTES - TAG_BYTES))
  const body = wrapped.subarray(ID_BYTES + IV_BYTES, WRAPPED_KEY_BYTES - TAG_BYTES)
  const raw = decipher.update(body)
  try {
    return ownOutput(raw, decipher.final())
  } catch (error) {
    raw.fill(0)
    throw error
  }
}

// A raw key is the decipher's own output, never copied (Buffer.concat would leave a copy behind that
// nothing overwrites); the final block holds nothing more, the key being whole blocks.
function ownOutput(raw: Buffer, rest: Buffer): Uint8Array {
  if (rest.byteLength > 0 || raw.byteLength !== OWNER_KEY_BYTES) {
    raw.fill(0)
    throw new Error(`an unwrapped key of ${raw.byteLength + rest.byteLength} bytes`)
  }
  return raw
}

export function newOwnerKey(): Uint8Array {
  return randomBytes(OWNER_KEY_BYTES)
}

// A new owner's pseudonym: 16 random bytes in hex, by which the log names them.
export function newPseudonym(): string {
  return randomBytes(16).toString('hex')
}
