import type { Executor } from '../database/database.ts'
import type { PlantChange } from './change-frame.ts'
import { readOwnerChanges, readOwnerHead, readOwnerPseudonym } from './owner-changes.ts'

// What a change stream reads beside the live log. Each read shows at least everything up to the
// follower's position when it was asked (every event a stream added before it will not get live).
export type ChangeReads = {
  // The owner's plants after `after`, oldest first, at most `count`.
  changesAfter: (owner: string, after: bigint, count: number) => Promise<PlantChange[]>
  // The position of the owner's latest plant (0 when none).
  head: (owner: string) => Promise<bigint>
  // The owner's pseudonym while they can be read (owner-changes.ts).
  pseudonym: (owner: string) => Promise<string | undefined>
}

// Everything read from the primary, which shows every committed event: the follower's position is
// read at each call, and the reads stop there (above it a late commit may still come, live).
export function primaryChangeReads(db: Executor, position: () => bigint): ChangeReads {
  return {
    changesAfter: (owner, after, count) => readOwnerChanges(db, owner, after, position(), count),
    head: (owner) => readOwnerHead(db, owner),
    pseudonym: (owner) => readOwnerPseudonym(db, owner),
  }
}
