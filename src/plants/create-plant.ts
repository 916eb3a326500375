import { sql } from 'drizzle-orm'
import type { Database } from '../store/database.ts'
import { appendBatchStatement, readStream, type StreamAppend } from '../store/event-store.ts'
import { groupCommit } from '../store/group-commit.ts'
import { isDatabaseUnavailable, postgresErrorCode } from '../store/unavailable.ts'
import { type CreatePlant, type Decision, decide, evolve, initialState, type PlantState } from './domain.ts'
import { decodePlantEvent, encodePlantEvent, plantStreamId } from './plant-events.ts'
import { projectInto } from './projection.ts'

// A create's answer: the decision, and the position of the plant's event in the log (the new one,
// or the one already stored on a retry or a conflict).
export type CreateResult = Decision & { position: bigint }

export type CreateRequest = { command: CreatePlant; requestId: string }

// A projection swap holds the events table exclusively and then drops `plants`; a create whose
// plan had locked `plants` first would wait on the swap in a cycle, and PostgreSQL aborts one of
// the two, having changed nothing. After the swap the create goes through.
const DEADLOCK_DETECTED = '40P01'
const MAX_ATTEMPTS = 3
// Enough for every request of a heavily loaded server to share one commit.
const MAX_BATCH_SIZE = 256

// Appends and projects in one statement, so one transaction: a GET after a 200 sees the plant.
const appendPlantEvents = appendBatchStatement('append_plant_events', {
  // Serialises one owner's appends, so the owner's positions commit in order and paging never
  // skips a late commit.
  lockKey: (metadata) => sql`hashtextextended(${metadata}->>'owner', 0)`,
  with: projectInto(),
})

// Creates on `db` through group commit: the creates that arrive while a batch is in the database
// share the next batch's statement, transaction and commit.
export function plantCreator(db: Database, inFlight = 1) {
  const create = groupCommit((requests: CreateRequest[]) => createPlants(db, requests), {
    maxBatchSize: MAX_BATCH_SIZE,
    inFlight,
  })
  return (command: CreatePlant, requestId: string) => create({ command, requestId })
}

export type PlantCreator = ReturnType<typeof plantCreator>

export async function createPlant(
  db: Database,
  command: CreatePlant,
  requestId: string,
): Promise<CreateResult> {
  const [result] = await appendWithRetries(db, [{ command, requestId }])
  if (!result) throw new Error('a create gave no result')
  return result
}

// A batch of creates, each with its own answer. When the batch's statement fails, no create of it
// has changed anything; the creates are then made one by one, so that an error reaches only the
// creates it concerns. When the database is unreachable, they all fail at once.
export async function createPlants(
  db: Database,
  requests: CreateRequest[],
): Promise<PromiseSettledResult<CreateResult>[]> {
  try {
    return (await appendWithRetries(db, requests)).map((value) => ({ status: 'fulfilled', value }))
  } catch (error) {
    if (requests.length === 1 || isDatabaseUnavailable(error)) {
      return requests.map(() => ({ status: 'rejected', reason: error }))
    }
    const results: PromiseSettledResult<CreateResult>[] = []
    for (const { command, requestId } of requests) {
      results.push(
        await createPlant(db, command, requestId).then(
          (value) => ({ status: 'fulfilled', value }),
          (reason: unknown) => ({ status: 'rejected', reason }),
        ),
      )
    }
    return results
  }
}

async function appendWithRetries(db: Database, requests: CreateRequest[]): Promise<CreateResult[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await appendAndDecide(db, requests)
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || postgresErrorCode(error) !== DEADLOCK_DETECTED) throw error
    }
  }
}

type StoredPlant = { state: PlantState; position: bigint }

// Most creates are of a plant that does not exist yet, so the first create of each stream in the
// batch is decided on an empty stream and appended at once: one statement for the whole batch. A
// stream that turns out to have its event already is read, and that create decided again on it (a
// retry is unchanged, a different plant a conflict). Later creates of a stream in the same batch are
// decided, in order, on what its first one left.
async function appendAndDecide(db: Database, requests: CreateRequest[]): Promise<CreateResult[]> {
  const streamIds = requests.map(({ command }) => plantStreamId(command.owner, command.plant.id))
  const firsts = new Map<string, number>()
  streamIds.forEach((streamId, index) => {
    if (!firsts.has(streamId)) firsts.set(streamId, index)
  })
  const leads = [...firsts.values()].map((index) => {
    const { command, requestId } = requests[index] as CreateRequest
    const decision = decide(command, initialState)
    const [event] = decision.events
    if (!event) throw new Error('a plant decided on an empty stream comes with its event')
    const append: StreamAppend = {
      streamId: streamIds[index] as string,
      expectedVersion: 0,
      event: encodePlantEvent(event),
      metadata: { owner: command.owner, requestId },
    }
    return { index, decision, append }
  })
  const positions = await appendPlantEvents(
    db,
    leads.map((lead) => lead.append),
  )
  const appended = new Map<number, bigint>()
  const stored = new Map<string, StoredPlant>()
  await Promise.all(
    leads.map(async ({ index, decision, append }, order) => {
      const position = positions[order]
      if (position === undefined) {
        stored.set(append.streamId, await readStoredPlant(db, append.streamId))
      } else {
        appended.set(index, position)
        stored.set(append.streamId, { state: { status: 'created', plant: decision.plant }, position })
      }
    }),
  )
  return requests.map(({ command }, index) => {
    const position = appended.get(index)
    if (position !== undefined) return { ...decide(command, initialState), position }
    const plant = stored.get(streamIds[index] as string) as StoredPlant
    return { ...decide(command, plant.state), position: plant.position }
  })
}

async function readStoredPlant(db: Database, streamId: string): Promise<StoredPlant> {
  const history = await readStream(db, streamId)
  const last = history.at(-1)
  // The append was skipped only because the stream's first event is committed.
  if (!last) throw new Error(`stream ${streamId} was taken but holds no event`)
  return { state: history.map(decodePlantEvent).reduce(evolve, initialState), position: last.position }
}
