import { sql } from 'drizzle-orm'
import type { Executor } from '../store/database.ts'
import { countEventsAfter, logHead } from '../store/event-log.ts'
import { isProjected } from '../store/event-store.ts'
import { readCheckpoint } from './checkpoints.ts'

export type ProjectionStatus = {
  // Where the log stood at the last rebuild; undefined if the projection was never rebuilt.
  checkpoint: bigint | undefined
  head: bigint
  events: number
  // Events since the last rebuild (0 if none)
  sinceCheckpoint: number
  // Events whose row `plants` lacks: what a rebuild would have to fold in (after an import, say).
  behind: number
}

// Appends project in their own transaction, so only events written around the projection (an
// import, a restored log) can be behind. Those are counted among the events since the last
// rebuild, each by its own row: the cost grows with those events, not with the log.
export async function projectionStatus(db: Executor): Promise<ProjectionStatus> {
  const [checkpoint, head] = await Promise.all([readCheckpoint(db, 'plants'), logHead(db)])
  const since = checkpoint ?? 0n
  const [sinceCheckpoint, behind] = await Promise.all([
    countEventsAfter(db, since),
    countEventsAfter(db, since, (event) => sql`not ${isProjected(event)}`),
  ])
  return { checkpoint, head: head.position, events: head.events, sinceCheckpoint, behind }
}
