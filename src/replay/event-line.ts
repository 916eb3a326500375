import { Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { INT64_MAX, isOwner, OWNER_RULE, plantStreamId, readStoredPlant } from '../plants/domain.ts'

// The envelope of one exported line (replay/export-events.ts).
const ExportedEvent = Type.Object({
  position: Type.String({ pattern: '^[1-9][0-9]{0,18}$' }),
  streamId: Type.String({ minLength: 1 }),
  streamVersion: Type.Integer({ minimum: 1, maximum: 2147483647 }),
  type: Type.String({ minLength: 1 }),
  schemaVersion: Type.Integer({ minimum: 0, maximum: 2147483647 }),
  data: Type.Object({}),
  metadata: Type.Object({ owner: Type.String(), requestId: Type.String() }),
  recordedAt: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?Z$' }),
})

// What the checks across lines (one plant per owner and id, stream versions, positions) need.
export type CheckedLine = {
  position: bigint
  streamId: string
  streamVersion: number
  owner: string
  plantId: bigint
}

// One exported line checked as the live path would check the event: a known type and schema
// version, data within §4's rules, an owner of 1–255 code points, a stream id that is the plant's
// own, a valid time and position, and no text the database would refuse. Returns the rule broken,
// or what the checks across lines need. Pure: the line is stored as written, by the database.
export function checkEventLine(line: string): CheckedLine | { refused: string } {
  let value: unknown
  try {
    value = parseLine(line)
  } catch {
    return { refused: 'not JSON' }
  }
  const badText = findBadText(value, '')
  if (badText !== undefined) {
    return {
      refused: `${badText || '/'}: text must be well-formed Unicode (no lone surrogate) without U+0000`,
    }
  }
  if (!Value.Check(ExportedEvent, value)) {
    const first = Value.Errors(ExportedEvent, value).First()
    return { refused: first ? `${first.path || '/'} ${first.message}` : 'not an exported event' }
  }
  const position = BigInt(value.position)
  if (position > INT64_MAX) return { refused: 'position must be from 1 to 9223372036854775807' }
  if (!isValidTime(value.recordedAt)) return { refused: `recordedAt ${value.recordedAt} is not a valid time` }
  const owner = value.metadata.owner
  if (!isOwner(owner)) return { refused: `metadata.owner: ${OWNER_RULE}` }
  const plant = readStoredPlant(value.type, value.schemaVersion, value.data)
  if (typeof plant === 'string') return { refused: plant }
  const streamId = plantStreamId(owner, plant.id)
  if (value.streamId !== streamId) {
    return { refused: `streamId must be the plant's own stream, ${JSON.stringify(streamId)}` }
  }
  return { position, streamId, streamVersion: value.streamVersion, owner, plantId: plant.id }
}

// PlantCreated v0 kept its id as a JSON number: an integer literal is read exactly, as a bigint;
// `7.0` or `7e0` stays a number and is refused as an id.
function parseLine(line: string): unknown {
  if (!line.includes('"plantId"')) return JSON.parse(line)
  return JSON.parse(line, (key, value: unknown, context?: { source?: string }) =>
    key === 'plantId' && typeof value === 'number' && /^-?(0|[1-9][0-9]*)$/.test(context?.source ?? '')
      ? BigInt(context?.source as string)
      : value,
  )
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
function isValidTime(text: string): boolean {
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
