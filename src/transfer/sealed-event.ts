import { Buffer } from 'node:buffer'
import { type EventPlace, type Opened, openSealed, type SealedPart, streamIdOf } from '../crypto/sealing.ts'

// An owner's key from an export, as an import checks the events sealed under it before it stores
// them (crypto/sealing.ts): a field is opened in either form, today's (AES-256-GCM, authenticated)
// or the earlier one (AES-256-CBC, which authenticates nothing: a changed byte is caught when it
// breaks what the opened text must be: JSON, a plant within the API's rules, the stream id).
export type ImportedOwnerKey = {
  // What `field` of the event at `place` holds, or undefined when it does not open with this key.
  open: (field: unknown, part: SealedPart, place: EventPlace) => Opened | undefined
  streamId: (plantId: bigint) => string
}

export const KEY_BYTES = 32
const CBC_IV_BYTES = 16
const BLOCK_BYTES = 16
const GCM_OVERHEAD_BYTES = 12 + 16

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

// The bytes of strict base64 (without line breaks), else undefined.
export function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  return BASE64.test(text) ? new Uint8Array(Buffer.from(text, 'base64')) : undefined
}

// Whether `field` can be a sealed field at all, `{"sealed": …}` or `{"gcm": …}` (beside the names
// in `besides`): base64 of an IV and whole blocks, or of an IV, a text and a tag.
export function isSealedField(field: Record<string, unknown>, besides: string[] = []): boolean {
  const names = Object.keys(field).filter((name) => !besides.includes(name))
  const [name] = names
  if (names.length !== 1) return false
  const text = field[name as string]
  const bytes = typeof text === 'string' ? base64Bytes(text) : undefined
  if (bytes === undefined) return false
  if (name === 'gcm') return bytes.length >= GCM_OVERHEAD_BYTES
  return name === 'sealed' && bytes.length >= CBC_IV_BYTES + BLOCK_BYTES && bytes.length % BLOCK_BYTES === 0
}

export function ownerKey(raw: Uint8Array): ImportedOwnerKey {
  return {
    open: (field, part, place) => {
      try {
        return openSealed(field, raw, part, place)
      } catch {
        // A wrong key, a changed byte, bad padding.
        return undefined
      }
    },
    streamId: (plantId) => streamIdOf(plantId, raw),
  }
}
