import type { FoldableEvent, NewEvent } from '../store/event-store.ts'
import type { PlantEvent } from './domain.ts'

export const PLANT_CREATED_SCHEMA_VERSION = 1

// The stored shape of PlantCreated v1. The id is a decimal string: JSON numbers beyond 2^53 do
// not survive most JSON parsers, and the log must outlive any one of them.
type PlantCreatedDataV1 = { id: string; name: string; tag: string | null }

// Each upcaster lifts PlantCreated data from its version to the next; replay chains them, so an
// event written in any past shape folds like one written today. The log itself is never rewritten.
const upcasters: Record<number, (data: Record<string, unknown>) => Record<string, unknown>> = {
  // v0 named the id `plantId` and kept it as a JSON number (bigint once read exactly, see
  // store/event-data.ts), named the name `title`, and could leave `tag` out.
  0: ({ plantId, title, tag }) => ({ id: integerText(plantId), name: title, tag: tag ?? null }),
}

// One stream per plant; ids are scoped to their owner. `plant:<id>:<owner>` is unambiguous
// because an id never contains a colon.
export function plantStreamId(owner: string, id: bigint): string {
  return `plant:${id}:${owner}`
}

export function encodePlantEvent(event: PlantEvent): NewEvent {
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

export function decodePlantEvent(recorded: FoldableEvent): PlantEvent {
  const where = `${recorded.type} v${recorded.schemaVersion} at position ${recorded.position}`
  if (
    recorded.type !== 'PlantCreated' ||
    !Number.isInteger(recorded.schemaVersion) ||
    recorded.schemaVersion < 0 ||
    recorded.schemaVersion > PLANT_CREATED_SCHEMA_VERSION
  ) {
    throw new Error(`unknown event ${where}`)
  }
  let data = recorded.data as Record<string, unknown>
  for (let version = recorded.schemaVersion; version < PLANT_CREATED_SCHEMA_VERSION; version++) {
    const upcast = upcasters[version]
    if (!upcast) throw new Error(`no upcaster from ${where}`)
    data = upcast(data)
  }
  if (!isPlantCreatedV1(data)) throw new Error(`malformed event ${where}`)
  return {
    type: 'PlantCreated',
    data: { id: BigInt(data.id), name: data.name, tag: data.tag },
    recordedAt: recorded.recordedAt,
  }
}

function isPlantCreatedV1(data: Record<string, unknown>): data is PlantCreatedDataV1 {
  return (
    typeof data.id === 'string' &&
    /^-?\d{1,19}$/.test(data.id) &&
    typeof data.name === 'string' &&
    (data.tag === null || typeof data.tag === 'string')
  )
}

function integerText(value: unknown): unknown {
  if (typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value))) {
    return value.toString()
  }
  return value
}
