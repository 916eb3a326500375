// The plant decider: pure, no I/O, no clock. Time arrives inside the command.

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

function assertNever(value: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`)
}
