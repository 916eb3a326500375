import type { FoldableEvent, NewEvent } from '../store/event-store.ts'
import type { PlantEvent } from './domain.ts'

export const PLANT_CREATED_SCHEMA_VERSION = 1

// The stored shape of PlantCreated v1. The id is a decimal string: JSON numbers beyond 2^53 do
// not survive most JSON parsers, and the log must outlive any one of them.
type PlantCreatedDataV1 = { id: string; name: string; tag: string | null }

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

// Events are read in today's shape whatever shape they were stored in: the database upcasts them
// as it reads them (migration 0004, the definition the projection applies too) and refuses a type
// or version it does not know. What is left to check here is that the data is what the domain
// expects; the stored schemaVersion only names the event in an error.
export function decodePlantEvent(recorded: FoldableEvent): PlantEvent {
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

function isPlantCreatedV1(data: Record<string, unknown>): data is PlantCreatedDataV1 {
  return (
    typeof data.id === 'string' &&
    /^-?\d{1,19}$/.test(data.id) &&
    typeof data.name === 'string' &&
    (data.tag === null || typeof data.tag === 'string')
  )
}
