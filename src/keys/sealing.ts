import { Buffer } from 'node:buffer'
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

// What the log keeps of an owner, sealed under the owner's key (docs/erasure.md): an event's data,
// and its metadata's request id and traceparent, each a JSON text.
// - Today's form, `{"gcm": <base64>}`: a 12-byte IV, the text under AES-256-GCM, its 16-byte tag;
//   authenticated with the part's name, so that a data field cannot pass for a metadata one.
// - The earlier form, `{"sealed": <base64>}`: a 16-byte IV and the text under AES-256-CBC
//   (PKCS#7), written by the database while it held the keys. Read, never written.
export type SealedPart = 'data' | 'metadata'
export type Sealed = { gcm: string } | { sealed: string }

const IV_BYTES = 12
const TAG_BYTES = 16

export function seal(text: string, key: Uint8Array, part: SealedPart): { gcm: string } {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(part))
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
  return { gcm: Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64') }
}

// The text `sealed` holds, in either form; undefined when it holds neither. Throws when the
// key does not open it.
export function openSealed(sealed: unknown, key: Uint8Array, part: SealedPart): string | undefined {
  if (typeof sealed !== 'object' || sealed === null) return undefined
  const form = sealed as { gcm?: unknown; sealed?: unknown }
  if (typeof form.gcm === 'string') {
    const bytes = Buffer.from(form.gcm, 'base64')
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES)).setAAD(
      Buffer.from(part),
    )
    decipher.setAuthTag(bytes.subarray(bytes.byteLength - TAG_BYTES))
    const body = bytes.subarray(IV_BYTES, bytes.byteLength - TAG_BYTES)
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8')
  }
  if (typeof form.sealed === 'string') {
    const bytes = Buffer.from(form.sealed, 'base64')
    const decipher = createDecipheriv('aes-256-cbc', key, bytes.subarray(0, 16))
    return Buffer.concat([decipher.update(bytes.subarray(16)), decipher.final()]).toString('utf8')
  }
  return undefined
}

// A plant's stream: an HMAC of its id (decimal) under its owner's key, so that neither the owner
// nor the id can be read from it, or computed again once the key is gone. The database computed
// the same value before the service held the keys, so streams keep their ids.
export function streamIdOf(plantId: bigint | string, key: Uint8Array): string {
  return `plant:${createHmac('sha256', key).update(plantId.toString(), 'utf8').digest('hex')}`
}
