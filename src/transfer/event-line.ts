import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { INT64_MAX, isOwner, OWNER_RULE, readStoredPlant } from '../domain/plant.ts'
import { PSEUDONYM, TIME } from './export-format.ts'
import { type ImportedOwnerKey, isSealedField } from './sealed-event.ts'

// The envelope of one exported event (transfer/export-format.ts).
const ExportedEvent = Type.Object({
  position: Type.String({ pattern: '^[1-9][0-9]{0,18}$' }),
  streamId: Type.String({ minLength: 1 }),
  streamVersion: Type.Integer({ minimum: 1, maximum: 2147483647 }),
  type: Type.String({ minLength: 1 }),
  schemaVersion: Type.Integer({ minimum: 0, maximum: 2147483647 }),
  data: Type.Object({}),
  metadata: Type.Object({}),
  recordedAt: Type.String({ pattern: TIME }),
})
type Envelope = Static<typeof ExportedEvent>

const PlainMetadata = Type.Object({ owner: Type.String(), requestId: Type.String() })

// What an event's pseudonym stands for, by the lines before it: a key (the owner can be read), an
// erased line, or nothing in the file (with --append, the target store must have erased it).
export type Pseudonym =
  | { kind: 'key'; owner: string; key: ImportedOwnerKey; line: number }
  | { kind: 'erased' }
  | { kind: 'unresolved' }

// What the checks across lines and against the store need. `owner` and `plantId` are null for an
// event that names no readable plant (an erased owner's, an OwnerErased); `sealed` is false for a
// version 1 event, sealed on its way in; `resolved` is false for an event whose pseudonym only the
// target store can vouch for. `plant`: the row the event makes in `plants` (with `owner`), so that
// the import projects without opening anything again.
export type CheckedEvent = {
  position: bigint
  streamId: string
  streamVersion: number
  owner: string | null
  plantId: bigint | null
  plant: { name: string; tag: string | null } | null
  pseudonym: string | null
  sealed: boolean
  resolved: boolean
}

export type Refused = { refused: string }

// A line as JSON, or the first rule it breaks before any shape is looked at: not JSON, or text the
// database would refuse (a lone surrogate, U+0000).
export function parseExportLine(line: string): { value: unknown } | Refused {
  let value: unknown
  try {
    value = parseJson(line)
  } catch {
    return { refused: 'not JSON' }
  }
  return badTextRefusal(value, '') ?? { value }
}

// The envelope of an exported event, checked as the live path would check it: a valid time and
// position, and the fields every event has.
function checkEnvelope(value: unknown): Envelope | Refused {
  if (!Value.Check(ExportedEvent, value)) {
    const first = Value.Errors(ExportedEvent, value).First()
    return { refused: first ? `${first.path || '/'} ${first.message}` : 'not an exported event' }
  }
  if (BigInt(value.position) > INT64_MAX) return { refused: 'position must be from 1 to 9223372036854775807' }
  if (!isValidTime(value.recordedAt)) return { refused: `recordedAt ${value.recordedAt} is not a valid time` }
  return value
}

// An event of a version 1 export (plaintext, before erasure): a known type and schema version, data
// within the API's rules for a plant (docs/api.md), an owner of 1–255 code points, the plant's own
// stream id ('plant:<id>:<owner>').
export function checkPlainEvent(value: unknown): CheckedEvent | Refused {
  const event = checkEnvelope(value)
  if ('refused' in event) return event
  if ('pseudonym' in event.metadata) {
    return {
      refused:
        'a sealed event in a file without the export header: its keys are missing (an export of this version starts with its header and key lines)',
    }
  }
  if (!Value.Check(PlainMetadata, event.metadata)) {
    const first = Value.Errors(PlainMetadata, event.metadata).First()
    return { refused: `/metadata${first?.path ?? ''} ${first?.message ?? 'is not {owner, requestId}'}` }
  }
  const owner = event.metadata.owner
  if (!isOwner(owner)) return { refused: `metadata.owner: ${OWNER_RULE}` }
  const plant = readStoredPlant(event.type, event.schemaVersion, event.data)
  if (typeof plant === 'string') return { refused: plant }
  const streamId = `plant:${plant.id}:${owner}`
  if (event.streamId !== streamId) {
    return { refused: `streamId must be the plant's own stream, ${JSON.stringify(streamId)}` }
  }
  return {
    ...located(event),
    owner,
    plantId: plant.id,
    plant: { name: plant.name, tag: plant.tag },
    pseudonym: null,
    sealed: false,
    resolved: true,
  }
}

// An event of a version 2 or 3 export, in the erasable form (docs/erasure.md). With its owner's key from
// the file, it is opened and checked as the live path would check it (a known type and schema
// version, data within the API's rules for a plant (docs/api.md), the request id, the stream id the
// HMAC of the plant's id); without (an erased owner's), only its envelope can be. `pseudonymOf`
// says what the lines before named the pseudonym; undefined refuses the event.
export async function checkSealedEvent(
  value: unknown,
  pseudonymOf: (pseudonym: string) => Promise<Pseudonym | undefined>,
): Promise<CheckedEvent | Refused> {
  const event = checkEnvelope(value)
  if ('refused' in event) return event
  const pseudonym = (event.metadata as { pseudonym?: unknown }).pseudonym
  if (typeof pseudonym !== 'string' || !new RegExp(PSEUDONYM).test(pseudonym)) {
    return { refused: 'metadata.pseudonym must be a pseudonym, 32 hexadecimal digits' }
  }
  const owner = await pseudonymOf(pseudonym)
  if (!owner) {
    return { refused: `pseudonym ${pseudonym} has neither a key line nor an erased line before its events` }
  }
  const checked = { ...located(event), pseudonym, sealed: true, resolved: owner.kind !== 'unresolved' }
  switch (event.type) {
    case 'OwnerErased': {
      const broken = ownerErasedRule(event, pseudonym, owner)
      return broken ? { refused: broken } : { ...checked, owner: null, plantId: null, plant: null }
    }
    case 'PlantCreated': {
      const broken = sealedShapeRule(event, pseudonym)
      if (broken) return { refused: broken }
      if (owner.kind !== 'key') {
        if (!/^plant:[0-9a-f]{64}$/.test(event.streamId)) {
          return { refused: "streamId must be a plant's stream: plant: and 64 hexadecimal digits" }
        }
        return { ...checked, owner: null, plantId: null, plant: null }
      }
      const plant = openPlant(event, owner)
      if ('refused' in plant) return plant
      return {
        ...checked,
        owner: owner.owner,
        plantId: plant.id,
        plant: { name: plant.name, tag: plant.tag },
      }
    }
    default:
      return {
        refused: `unknown event type ${JSON.stringify(event.type)} (known: PlantCreated, OwnerErased)`,
      }
  }
}

// The plant a sealed PlantCreated holds, opened with its owner's key, or the rule broken. An event
// that does not open or fit where it stands is named by its position too, as `projection verify`
// names it.
function openPlant(
  event: Envelope,
  owner: Pseudonym & { kind: 'key' },
): { id: bigint; name: string; tag: string | null } | Refused {
  const at = `(the event at position ${event.position})`
  const cannotOpen = (field: string) => ({
    refused: `${field}: does not open with the key of its pseudonym (line ${owner.line}): a wrong key, changed bytes, or bytes copied from another event ${at}`,
  })
  const data = openJson(owner.key, event, 'data')
  if (data === undefined) return cannotOpen('data')
  const badData = badTextRefusal(data, '/data')
  if (badData) return badData
  const plant = readStoredPlant(event.type, event.schemaVersion, data)
  if (typeof plant === 'string') return { refused: plant }
  const metadata = openJson(owner.key, event, 'metadata')
  if (metadata === undefined) return cannotOpen('metadata')
  const badMetadata = badTextRefusal(metadata, '/metadata')
  if (badMetadata) return badMetadata
  if (!isRequestMetadata(metadata))
    return { refused: 'metadata: the sealed metadata must be {"requestId": text, "traceparent"?: text}' }
  if (event.streamId !== owner.key.streamId(plant.id)) {
    return {
      refused: `streamId must be the plant's own stream, the HMAC of its id under its owner's key ${at}`,
    }
  }
  return plant
}

function ownerErasedRule(event: Envelope, pseudonym: string, owner: Pseudonym): string | undefined {
  if (event.schemaVersion !== 1)
    return `unknown schema version ${event.schemaVersion} of OwnerErased (known: 1)`
  if (Object.keys(event.data).length > 0) return 'data of OwnerErased must be {}'
  if (Object.keys(event.metadata).length !== 1)
    return 'metadata of OwnerErased must be {"pseudonym": …} alone'
  if (event.streamId !== `owner:${pseudonym}` || event.streamVersion !== 1) {
    return `OwnerErased must be version 1 of stream "owner:${pseudonym}"`
  }
  if (owner.kind === 'key') {
    return `OwnerErased of pseudonym ${pseudonym}, whose key is at line ${owner.line}: an erased owner has an erased line, not a key`
  }
  return undefined
}

// A sealed PlantCreated's data and metadata hold nothing but their sealed texts and the pseudonym.
function sealedShapeRule(event: Envelope, pseudonym: string): string | undefined {
  if (event.schemaVersion !== 0 && event.schemaVersion !== 1) {
    return `unknown schema version ${event.schemaVersion} of PlantCreated (known: 0, 1)`
  }
  if (!isSealedField(event.data)) {
    return 'data must be {"gcm": <base64 of an IV, a text and a tag>} or {"sealed": <base64 of an IV and whole blocks>} alone'
  }
  if (!isSealedField(event.metadata, ['pseudonym'])) {
    return `metadata must be {"pseudonym": "${pseudonym}", "gcm" or "sealed": <base64>} alone`
  }
  return undefined
}

// A sealed part of `event` as JSON: undefined when it does not open for this event with this key.
function openJson(key: ImportedOwnerKey, event: Envelope, part: 'data' | 'metadata'): unknown {
  const opened = key.open(event[part], part, event)
  if (opened === undefined) return undefined
  try {
    return parseJson(opened.text)
  } catch {
    return undefined
  }
}

// The request's id, and its W3C trace context when it was traced.
function isRequestMetadata(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { requestId, traceparent, ...rest } = value as Record<string, unknown>
  return (
    Object.keys(rest).length === 0 &&
    typeof requestId === 'string' &&
    (traceparent === undefined || typeof traceparent === 'string')
  )
}

function located(event: Envelope) {
  return { position: BigInt(event.position), streamId: event.streamId, streamVersion: event.streamVersion }
}

// PlantCreated v0 kept its id as a JSON number: an integer literal is read exactly, as a bigint;
// `7.0` or `7e0` stays a number and is refused as an id.
function parseJson(text: string): unknown {
  if (!text.includes('"plantId"')) return JSON.parse(text)
  return JSON.parse(text, (key, value: unknown, context?: { source?: string }) =>
    key === 'plantId' && typeof value === 'number' && /^-?(0|[1-9][0-9]*)$/.test(context?.source ?? '')
      ? BigInt(context?.source as string)
      : value,
  )
}

function badTextRefusal(value: unknown, path: string): Refused | undefined {
  const bad = findBadText(value, path)
  return bad === undefined
    ? undefined
    : { refused: `${bad || '/'}: text must be well-formed Unicode (no lone surrogate) without U+0000` }
}

// The path of the first key or string the database would refuse (a lone surrogate, U+0000).
function findBadText(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : path
  if (typeof value !== 'object' || value === null) return undefined
  for (const [key, inner] of Object.entries(value)) {
    if (!isStorableText(key)) return `${path}/${key}`
    const found = findBadText(inner, `${path}/${key}`)
    if (found !== undefined) return found
  }
  return undefined
}

function isStorableText(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000')
}

// A time the database takes as it is: year 1 or later, and every field within its range.
export function isValidTime(text: string): boolean {
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = (text.match(/\d+/g) ?? []).map(
    Number,
  )
  if (year < 1) return false
  const time = new Date(0)
  time.setUTCFullYear(year, month - 1, day)
  time.setUTCHours(hour, minute, second)
  return (
    time.getUTCFullYear() === year &&
    time.getUTCMonth() === month - 1 &&
    time.getUTCDate() === day &&
    time.getUTCHours() === hour &&
    time.getUTCMinutes() === minute &&
    time.getUTCSeconds() === second
  )
}
