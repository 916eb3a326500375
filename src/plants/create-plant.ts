import { sql } from 'drizzle-orm'
import { holdAppendLock } from '../store/append-lock.ts'
import type { Database } from '../store/database.ts'
import { appendToStream, type EventMetadata, readStream } from '../store/event-store.ts'
import { postgresErrorCode } from '../store/unavailable.ts'
import { type CreatePlant, type Decision, decide, evolve, initialState } from './domain.ts'
import { decodePlantEvent, encodePlantEvent, plantStreamId } from './plant-events.ts'
import { projectEvents } from './projection.ts'

const UNIQUE_VIOLATION = '23505'
const MAX_ATTEMPTS = 3

// Read, decide, append, project: one transaction, so a GET after a 200 sees the plant.
export async function createPlant(db: Database, command: CreatePlant, requestId: string): Promise<Decision> {
  const streamId = plantStreamId(command.owner, command.plant.id)
  const metadata: EventMetadata = { owner: command.owner, requestId }
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(async (tx) => {
        // First, before touching any table: a projection swap waits for this (append-lock.ts).
        await holdAppendLock(tx)
        // Serialises one owner's writes: concurrent creations of the same id queue up here instead
        // of racing, and the owner's positions commit in order, so paging never skips a late commit.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${command.owner}, 0))`)
        const history = await readStream(tx, streamId)
        const state = history.map(decodePlantEvent).reduce(evolve, initialState)
        const decision = decide(command, state)
        const recorded = await appendToStream(
          tx,
          streamId,
          history.length,
          decision.events.map(encodePlantEvent),
          metadata,
        )
        await projectEvents(tx, recorded)
        return decision
      })
    } catch (error) {
      // Another writer appended to the stream first (the lock makes this rare): decide again.
      if (attempt < MAX_ATTEMPTS && postgresErrorCode(error) === UNIQUE_VIOLATION) continue
      throw error
    }
  }
}
