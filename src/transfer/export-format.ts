import { Type } from '@sinclair/typebox'

// The lines of an export (`events export`), NDJSON, one JSON object a line, in this order:
//
//   {"format":"plant-store-events","version":3}
//       the header: the version of this format.
//   {"key":{"pseudonym":"<32 hex>","owner":"<the token's sub>","key":"<64 bytes, base64>"}}
//       the key as the store keeps it, wrapped under a key-encryption key (docs/keys.md), in
//       today's form bound to its pseudonym or the earlier 52-byte one: an import needs that KEK
//       among its own, unwraps the key and wraps it again under its first. A version 2 file, the
//       same otherwise, holds the raw 32 bytes, which an import wraps on their way in.
//       one per owner key not being erased in the export's snapshot (all of them, whether or not
//       the owner has events in the export: an export --after P holds the keys of every owner).
//   {"erased":{"pseudonym":"<32 hex>","erasedAt":"<RFC 3339, UTC>"}}
//       one per erased pseudonym, and per pseudonym whose erasure has begun: those owners stay
//       unreadable in whatever store imports the file.
//   {"position":"7","streamId":…,"streamVersion":1,"type":…,"schemaVersion":…,"data":…,
//    "metadata":…,"recordedAt":"…"}
//       the events, exactly as stored (sealed, {"gcm": …} or the earlier {"sealed": …},
//       docs/erasure.md; data and metadata as PostgreSQL prints them), in position order.
//
// An export holds keys: it must be kept, and expired, like a backup. A file without the header is
// version 1, written before erasure: events only, in plaintext (metadata {owner, requestId},
// stream id 'plant:<id>:<owner>'); an import seals them under their owner's key.
export const EXPORT_FORMAT = 'plant-store-events'
export const EXPORT_VERSION = 3
export const RAW_KEYS_VERSION = 2

export const HEADER_LINE = `${JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION })}\n`

export function keyLine([pseudonym, owner, key]: [string, string, string]): string {
  return `${JSON.stringify({ key: { pseudonym, owner, key } })}\n`
}

export function erasedLine([pseudonym, erasedAt]: [string, string]): string {
  return `${JSON.stringify({ erased: { pseudonym, erasedAt } })}\n`
}

// As the append statement makes them (event-log/append.ts): 16 random bytes in hex.
export const PSEUDONYM = '^[0-9a-f]{32}$'
export const TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?Z$'

export const HeaderLine = Type.Object({ format: Type.String(), version: Type.Integer() })

export const KeyLine = Type.Object(
  {
    key: Type.Object(
      { pseudonym: Type.String({ pattern: PSEUDONYM }), owner: Type.String(), key: Type.String() },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

export const ErasedLine = Type.Object(
  {
    erased: Type.Object(
      { pseudonym: Type.String({ pattern: PSEUDONYM }), erasedAt: Type.String({ pattern: TIME }) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)
