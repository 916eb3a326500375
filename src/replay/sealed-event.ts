import { Buffer } from 'node:buffer'

// An owner's key from an export, as an import checks the events sealed under it before it stores
// them (docs/erasure.md; the database's side is in migration 0006). pgcrypto's encrypt_iv with
// 'aes-cbc/pad:pkcs' is AES-CBC with PKCS#7 padding, here AES-256; a sealed text is the base64 of
// the IV (16 bytes) and the ciphertext. A plant's stream id is 'plant:' and the hex of the
// HMAC-SHA256 of its decimal id under the key. CBC authenticates nothing: a changed byte is caught
// when it breaks what the opened text must be (JSON, a plant within the API's rules, the stream id).
export type OwnerKey = {
  // The text sealed in `sealed`, or undefined when it does not open with this key.
  open: (sealed: string) => Promise<string | undefined>
  streamId: (plantId: bigint) => Promise<string>
}

export const KEY_BYTES = 32
const IV_BYTES = 16
const BLOCK_BYTES = 16

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

// The bytes of strict base64 (as PostgreSQL's encode writes it, without line breaks), else undefined.
export function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  return BASE64.test(text) ? new Uint8Array(Buffer.from(text, 'base64')) : undefined
}

// Whether `text` can be a sealed text at all: base64 of an IV and at least one whole block.
export function isSealedText(text: string): boolean {
  const bytes = base64Bytes(text)
  return bytes !== undefined && bytes.length >= IV_BYTES + BLOCK_BYTES && bytes.length % BLOCK_BYTES === 0
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const encoder = new TextEncoder()

export async function ownerKey(raw: Uint8Array): Promise<OwnerKey> {
  const bytes = new Uint8Array(raw)
  const [cipher, mac] = await Promise.all([
    crypto.subtle.importKey('raw', bytes, 'AES-CBC', false, ['decrypt']),
    crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']),
  ])
  return {
    open: async (sealed) => {
      const sealedBytes = base64Bytes(sealed)
      if (!sealedBytes || !isSealedText(sealed)) return undefined
      try {
        const plain = await crypto.subtle.decrypt(
          { name: 'AES-CBC', iv: sealedBytes.subarray(0, IV_BYTES) },
          cipher,
          sealedBytes.subarray(IV_BYTES),
        )
        return utf8.decode(plain)
      } catch {
        // Bad padding (a wrong key, a changed byte) or bytes that are not UTF-8.
        return undefined
      }
    },
    streamId: async (plantId) => {
      const digest = await crypto.subtle.sign('HMAC', mac, encoder.encode(plantId.toString()))
      return `plant:${Buffer.from(digest).toString('hex')}`
    },
  }
}
