import type { Executor } from '../store/database.ts'
import { countEventsAfter, logHead } from '../store/event-log.ts'
import { readCheckpoint } from './checkpoints.ts'

export type ProjectionStatus = {
  // The highest event position folded into `plants`; undefined before any event was projected.
  checkpoint: bigint | undefined
  head: bigint
  events: number
  behind: number
}

export async function projectionStatus(db: Executor): Promise<ProjectionStatus> {
  const [checkpoint, head] = await Promise.all([readCheckpoint(db, 'plants'), logHead(db)])
  const behind = checkpoint === undefined ? head.events : await countEventsAfter(db, checkpoint)
  return { checkpoint, head: head.position, events: head.events, behind }
}
