import { sql } from 'drizzle-orm'
import { appendLockShared } from '../store/append-lock.ts'
import type { Database } from '../store/database.ts'
import { appendToStream, type EventMetadata, readStream } from '../store/event-store.ts'
import { postgresErrorCode } from '../store/unavailable.ts'
import { type CreatePlant, type Decision, decide, evolve, initialState } from './domain.ts'
import { decodePlantEvent, encodePlantEvent, plantStreamId } from './plant-events.ts'
import { projectAppended } from './projection.ts'

const UNIQUE_VIOLATION = '23505'
// The statement locks `plants` when it is planned, then waits for the append lock. A projection
// swap holds that lock and then drops `plants`: PostgreSQL finds the cycle and, as this statement
// waited first, aborts it, having changed nothing. After the swap it goes through.
const DEADLOCK_DETECTED = '40P01'
const RETRYABLE = [UNIQUE_VIOLATION, DEADLOCK_DETECTED]
const MAX_ATTEMPTS = 3

// Read, decide, then append and project in one statement: one transaction, so a GET after a 200
// sees the plant, and two round trips in all. The read takes no lock: the append states the
// version it expects, and a writer that got there first makes it fail on the stream's unique key,
// after which the command is decided again on the stream as it now stands.
export async function createPlant(db: Database, command: CreatePlant, requestId: string): Promise<Decision> {
  const streamId = plantStreamId(command.owner, command.plant.id)
  const metadata: EventMetadata = { owner: command.owner, requestId }
  for (let attempt = 1; ; attempt++) {
    try {
      const history = await readStream(db, streamId)
      const decision = decide(command, history.map(decodePlantEvent).reduce(evolve, initialState))
      await appendToStream(db, streamId, history.length, decision.events.map(encodePlantEvent), metadata, {
        locks: [
          // First: a projection swap waits for appends in flight (append-lock.ts).
          appendLockShared,
          // Serialises one owner's appends, so the owner's positions commit in order and paging
          // never skips a late commit.
          sql`pg_advisory_xact_lock(hashtextextended(${command.owner}::text, 0))`,
        ],
        with: projectAppended(command.owner, decision.events, history.length + 1),
      })
      return decision
    } catch (error) {
      // Another writer appended to the stream first, or a swap was under way: decide again.
      if (attempt < MAX_ATTEMPTS && RETRYABLE.includes(postgresErrorCode(error) ?? '')) continue
      throw error
    }
  }
}
