import { Buffer } from 'node:buffer'
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

// What the log keeps of an owner, sealed under the owner's key (docs/erasure.md): an event's data,
// and its metadata's request id and traceparent, each a JSON text.
// - Today's form, `{"gcm": <base64>}`: a 12-byte IV, the text under AES-256-GCM, its 16-byte tag;
//   authenticated with the part's name and the event's place (its stream id and version), so that
//   a data field cannot pass for a metadata one, nor a sealed text copied into another event for
//   that event's.
// - The earlier `{"gcm": …}`, authenticated with the part's name alone: read, never written. A
//   text that does not open as today's is opened as this one; which form opened is told, so that a
//   reader can check what the earlier form does not bind (event-log/sealed-parts.ts).
// - The earliest form, `{"sealed": <base64>}`: a 16-byte IV and the text under AES-256-CBC
//   (PKCS#7), written by the database while it held the keys. Read, never written.
// Every cipher is finalised, opened or not: until then its context holds the key (docs/keys.md).
export type SealedPart = 'data' | 'metadata'
export type Sealed = { gcm: string } | { sealed: string }

// The event a sealed part belongs to.
export type EventPlace = { streamId: string; streamVersion: number }

// What a sealed field held: its text, and whether it was bound to its event's place.
export type Opened = { text: string; bound: boolean }

const IV_BYTES = 12
const TAG_BYTES = 16
const CBC_IV_BYTES = 16

// The additional data of today's form. NUL never occurs in a part's name or a stream id, so no two
// places share it, and none is the earlier form's part name alone.
function additionalData(part: SealedPart, { streamId, streamVersion }: EventPlace): Buffer {
  return Buffer.from(`${part}\0${streamId}\0${streamVersion}`, 'utf8')
}

export function seal(text: string, key: Uint8Array, part: SealedPart, place: EventPlace): { gcm: string } {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(additionalData(part, place))
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
  return { gcm: Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64') }
}

// What `sealed` holds, in any form; undefined when it holds none. Throws when the key does not open
// it for this part of this event.
export function openSealed(
  sealed: unknown,
  key: Uint8Array,
  part: SealedPart,
  place: EventPlace,
): Opened | undefined {
  if (typeof sealed !== 'object' || sealed === null) return undefined
  const form = sealed as { gcm?: unknown; sealed?: unknown }
  if (typeof form.gcm === 'string') {
    const bytes = Buffer.from(form.gcm, 'base64')
    if (bytes.byteLength < IV_BYTES + TAG_BYTES) throw new Error('a sealed text too short to hold its tag')
    const bound = openGcm(bytes, key, additionalData(part, place))
    if (bound !== undefined) return { text: bound, bound: true }
    const earlier = openGcm(bytes, key, Buffer.from(part))
    if (earlier !== undefined) return { text: earlier, bound: false }
    throw new Error('a sealed text that does not open with its key for its event')
  }
  if (typeof form.sealed === 'string') {
    const bytes = Buffer.from(form.sealed, 'base64')
    if (bytes.byteLength < 2 * CBC_IV_BYTES) throw new Error('a sealed text shorter than its IV and a block')
    const decipher = createDecipheriv('aes-256-cbc', key, bytes.subarray(0, CBC_IV_BYTES))
    const body = decipher.update(bytes.subarray(CBC_IV_BYTES))
    return { text: Buffer.concat([body, decipher.final()]).toString('utf8'), bound: false }
  }
  return undefined
}

// The text, or undefined when the tag does not match.
function openGcm(bytes: Buffer, key: Uint8Array, aad: Buffer): string | undefined {
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES)).setAAD(aad)
  decipher.setAuthTag(bytes.subarray(bytes.byteLength - TAG_BYTES))
  const body = decipher.update(bytes.subarray(IV_BYTES, bytes.byteLength - TAG_BYTES))
  try {
    decipher.final()
  } catch {
    return undefined
  }
  return body.toString('utf8')
}

// A plant's stream: an HMAC of its id (decimal) under its owner's key, so that neither the owner
// nor the id can be read from it, or computed again once the key is gone. The database computed
// the same value before the service held the keys, so streams keep their ids.
export function streamIdOf(plantId: bigint | string, key: Uint8Array): string {
  return `plant:${createHmac('sha256', key).update(plantId.toString(), 'utf8').digest('hex')}`
}
