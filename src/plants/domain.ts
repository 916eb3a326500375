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

// An event as the log stores it (store/event-store.ts).
export type StoredEvent = { type: string; schemaVersion: number; data: unknown; recordedAt: Date }

// The stored shape of PlantCreated v1. The id is a decimal string: JSON numbers beyond 2^53 do
// not survive most JSON parsers, and the log must outlive any one of them.
type PlantCreatedDataV1 = { id: string; name: string; tag: string | null }

// One stream per plant; ids are scoped to their owner. `plant:<id>:<owner>` is unambiguous
// because an id never contains a colon.
export function plantStreamId(owner: string, id: bigint): string {
  return `plant:${id}:${owner}`
}

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

function isPlantCreatedV1(data: Record<string, unknown>): data is PlantCreatedDataV1 {
  return (
    typeof data.id === 'string' &&
    /^-?\d{1,19}$/.test(data.id) &&
    typeof data.name === 'string' &&
    (data.tag === null || typeof data.tag === 'string')
  )
}

function assertNever(value: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`)
}
