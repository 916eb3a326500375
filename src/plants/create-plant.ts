import { sql } from 'drizzle-orm'
import type { Database } from '../store/database.ts'
import { appendStatement, type EventMetadata, type RecordedEvent, readStream } from '../store/event-store.ts'
import { postgresErrorCode } from '../store/unavailable.ts'
import { type CreatePlant, type Decision, decide, evolve, initialState } from './domain.ts'
import { decodePlantEvent, encodePlantEvent, plantStreamId } from './plant-events.ts'
import { projectInto } from './projection.ts'

const UNIQUE_VIOLATION = '23505'
// A projection swap holds the events table exclusively and then drops `plants`; a create whose
// plan had locked `plants` first would wait on the swap in a cycle, and PostgreSQL aborts one of
// the two, having changed nothing. After the swap the create goes through.
const DEADLOCK_DETECTED = '40P01'
const RETRYABLE = [UNIQUE_VIOLATION, DEADLOCK_DETECTED]
const MAX_ATTEMPTS = 3

// Appends and projects in one statement, so one transaction: a GET after a 200 sees the plant.
const appendPlantEvents = appendStatement('append_plant_events', {
  // Serialises one owner's appends, so the owner's positions commit in order and paging never
  // skips a late commit.
  locks: (metadata) => [sql`pg_advisory_xact_lock(hashtextextended(${metadata}->>'owner', 0))`],
  with: projectInto(),
})

// Most creates are of a plant that does not exist yet, so the first attempt decides on an empty
// stream and appends at once: one round trip. If the stream already has events the append fails
// on its unique key, having changed nothing; only then is the stream read and the command decided
// again on it (a retry is unchanged, a different plant a conflict). A writer racing on the same
// stream ends the same way, as does a deadlock with a projection swap. `position` is that of the
// event holding the plant (new or existing): it comes back from the same statement, so read-your-
// writes (CONTRACT §10) costs a create no round trip.
export type CreateResult = Decision & { position: bigint }

export async function createPlant(
  db: Database,
  command: CreatePlant,
  requestId: string,
): Promise<CreateResult> {
  const streamId = plantStreamId(command.owner, command.plant.id)
  const metadata: EventMetadata = { owner: command.owner, requestId }
  let history: RecordedEvent[] = []
  for (let attempt = 1; ; attempt++) {
    const decision = decide(command, history.map(decodePlantEvent).reduce(evolve, initialState))
    try {
      const appended = await appendPlantEvents(
        db,
        streamId,
        history.length,
        decision.events.map(encodePlantEvent),
        metadata,
      )
      const holding = appended.at(-1) ?? history.at(-1)
      if (holding === undefined) throw new Error(`no event holds plant ${command.plant.id}`)
      return { ...decision, position: holding.position }
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !RETRYABLE.includes(postgresErrorCode(error) ?? '')) throw error
      history = await readStream(db, streamId)
    }
  }
}
