// The plant decider and its events' stored form: pure, no I/O, no clock. Time arrives inside the
// command.

export type Plant = { id: bigint; name: string; tag: string | null }

export type CreatePlant = { type: 'CreatePlant'; owner: string; plant: Plant; now: Date }

export type PlantCreated = { type: 'PlantCreated'; data: Plant; recordedAt: Date }

export type PlantEvent = PlantCreated

export type PlantState = { status: 'absent' } | { status: 'created'; plant: Plant }

export type Decision =
  | { outcome: 'created'; plant: Plant; events: PlantEvent[] }
  | { outcome: 'unchanged'; plant: Plant; events: [] }
  | { outcome: 'conflict'; plant: Plant; existing: Plant; events: [] }

export const initialState: PlantState = { status: 'absent' }

export function evolve(_state: PlantState, event: PlantEvent): PlantState {
  switch (event.type) {
    case 'PlantCreated':
      return { status: 'created', plant: event.data }
    default:
      return assertNever(event.type)
  }
}

export function decide(command: CreatePlant, state: PlantState): Decision {
  switch (state.status) {
    case 'absent':
      return {
        outcome: 'created',
        plant: command.plant,
        events: [{ type: 'PlantCreated', data: command.plant, recordedAt: command.now }],
      }
    case 'created':
      return samePlant(state.plant, command.plant)
        ? { outcome: 'unchanged', plant: state.plant, events: [] }
        : { outcome: 'conflict', plant: command.plant, existing: state.plant, events: [] }
    default:
      return assertNever(state)
  }
}

export function samePlant(a: Plant, b: Plant): boolean {
  return a.id === b.id && a.name === b.name && a.tag === b.tag
}

export const PLANT_CREATED_SCHEMA_VERSION = 1

// The API's rules for what a plant and its owner may be (docs/api.md): the one check the API's schema (http/
// schema-kinds.ts), the token's subject and an imported event (transfer/event-line.ts) all apply.
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

export function isPlantId(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX
}

// Well-formed Unicode without U+0000, of minLength to maxLength code points.
export function isText(value: unknown, minLength: number, maxLength: number): value is string {
  if (typeof value !== 'string' || !value.isWellFormed() || value.includes('\u0000')) return false
  const codePoints = countCodePoints(value, maxLength + 1)
  return codePoints >= minLength && codePoints <= maxLength
}

export const OWNER_RULE = 'the owner must be 1 to 255 characters, well-formed Unicode without U+0000'
export const NAME_RULE = 'name must be a string of 1 to 1024 characters, well-formed Unicode without U+0000'
export const TAG_RULE =
  'tag must be null or a string of 0 to 1024 characters, well-formed Unicode without U+0000'
export const ID_RULE = 'id must be an integer from -9223372036854775808 to 9223372036854775807'

export function isOwner(value: unknown): value is string {
  return isText(value, 1, 255)
}

// The rule a plant breaks, if any.
export function plantRuleBroken(plant: { id: unknown; name: unknown; tag: unknown }): string | undefined {
  if (!isPlantId(plant.id)) return ID_RULE
  if (!isText(plant.name, 1, 1024)) return NAME_RULE
  if (plant.tag !== null && !isText(plant.tag, 0, 1024)) return TAG_RULE
  return undefined
}

function countCodePoints(text: string, stopAt: number): number {
  let count = 0
  for (const _ of text) if (++count >= stopAt) break
  return count
}

// An event as the log stores it (event-log/append.ts).
export type StoredEvent = { type: string; schemaVersion: number; data: unknown; recordedAt: Date }

// The stored shape of PlantCreated v1. The id is a decimal string: JSON numbers beyond 2^53 do
// not survive most JSON parsers, and the log must outlive any one of them.
type PlantCreatedDataV1 = { id: string; name: string; tag: string | null }

export function encodePlantEvent(event: PlantEvent): StoredEvent {
  switch (event.type) {
    case 'PlantCreated': {
      const data: PlantCreatedDataV1 = {
        id: event.data.id.toString(),
        name: event.data.name,
        tag: event.data.tag,
      }
      return {
        type: event.type,
        schemaVersion: PLANT_CREATED_SCHEMA_VERSION,
        data,
        recordedAt: event.recordedAt,
      }
    }
  }
}

// Events are read in today's shape whatever shape they were stored in: the database upcasts them
// as it reads them (migration 0004, the definition the projection applies too) and refuses a type
// or version it does not know. What is left to check here is that the data is what the domain
// expects; the stored schemaVersion only names the event in an error.
export function decodePlantEvent(recorded: StoredEvent & { position: bigint }): PlantEvent {
  const where = `${recorded.type} v${recorded.schemaVersion} at position ${recorded.position}`
  if (recorded.type !== 'PlantCreated') throw new Error(`unknown event ${where}`)
  const data = recorded.data as Record<string, unknown>
  if (!isPlantCreatedV1(data)) throw new Error(`malformed event ${where}`)
  return {
    type: 'PlantCreated',
    data: { id: BigInt(data.id), name: data.name, tag: data.tag },
    recordedAt: recorded.recordedAt,
  }
}

// The plant a stored event describes, in any shape the log keeps (read as the database reads it,
// plant_store_event in migration 0004), or the rule it breaks. PlantCreated v1: the id as decimal
// text and a tag that is null or text; v0: `plantId` an integer (a bigint here), `title`, `tag`
// optional.
export function readStoredPlant(type: string, schemaVersion: number, data: unknown): Plant | string {
  if (type !== 'PlantCreated') return `unknown event type ${JSON.stringify(type)} (known: PlantCreated)`
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'data must be an object'
  const fields = data as Record<string, unknown>
  const known = schemaVersion === 1 ? ['id', 'name', 'tag'] : ['plantId', 'title', 'tag']
  if (schemaVersion !== 0 && schemaVersion !== 1) {
    return `unknown schema version ${schemaVersion} of PlantCreated (known: 0, 1)`
  }
  const unknown = Object.keys(fields).find((key) => !known.includes(key))
  if (unknown !== undefined) return `data has an unknown property ${JSON.stringify(unknown)}`
  const id = schemaVersion === 1 ? decimalId(fields.id) : fields.plantId
  const plant = { id, name: schemaVersion === 1 ? fields.name : fields.title, tag: fields.tag ?? null }
  if (schemaVersion === 1 && !('tag' in fields)) return TAG_RULE
  const broken = plantRuleBroken(plant)
  return broken === undefined ? (plant as Plant) : `data: ${broken}`
}

// A v1 id: decimal text, as written by encodePlantEvent.
function decimalId(value: unknown): bigint | undefined {
  return typeof value === 'string' && /^(0|-?[1-9][0-9]{0,18})$/.test(value) ? BigInt(value) : undefined
}

function isPlantCreatedV1(data: Record<string, unknown>): data is PlantCreatedDataV1 {
  return (
    typeof data.id === 'string' &&
    /^-?\d{1,19}$/.test(data.id) &&
    typeof data.name === 'string' &&
    (data.tag === null || typeof data.tag === 'string')
  )
}

function assertNever(value: never): never {
  // Only its type: the value may be a command or an event, whose plant a log must not show.
  throw new Error(`unhandled case: ${String((value as { type?: unknown } | null)?.type)}`)
}
