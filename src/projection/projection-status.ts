import { eq, sql } from 'drizzle-orm'
import type { Executor } from '../database/database.ts'
import { isProjected } from '../event-log/plant-rows.ts'
import { countEventsAfter, logHead } from '../event-log/reading.ts'
import { projectionCheckpoints } from '../event-log/schema.ts'

export type ProjectionStatus = {
  // Where the log stood at the last rebuild (the highest position it folded); undefined if the
  // projection was never rebuilt. Live appends move no checkpoint, so that no row is written by
  // every create.
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
  const [[row], head] = await Promise.all([
    db
      .select({ position: projectionCheckpoints.position })
      .from(projectionCheckpoints)
      .where(eq(projectionCheckpoints.projection, 'plants')),
    logHead(db),
  ])
  const since = row?.position ?? 0n
  const [sinceCheckpoint, behind] = await Promise.all([
    countEventsAfter(db, since),
    countEventsAfter(db, since, (event) => sql`not ${isProjected(event)}`),
  ])
  return { checkpoint: row?.position, head: head.position, events: head.events, sinceCheckpoint, behind }
}
