import { eq } from 'drizzle-orm'
import type { Executor } from '../store/database.ts'
import { projectionCheckpoints } from '../store/schema.ts'

// Where the log stood when a projection table was last rebuilt: the highest position it folded.
// Live appends project in their own transaction and move no checkpoint, so that no row is written
// by every create; projection-status.ts counts what came after.

export async function readCheckpoint(db: Executor, projection: string): Promise<bigint | undefined> {
  const [row] = await db
    .select({ position: projectionCheckpoints.position })
    .from(projectionCheckpoints)
    .where(eq(projectionCheckpoints.projection, projection))
  return row?.position
}

export async function writeCheckpoint(db: Executor, projection: string, position: bigint): Promise<void> {
  await db
    .insert(projectionCheckpoints)
    .values({ projection, position })
    .onConflictDoUpdate({ target: projectionCheckpoints.projection, set: { position } })
}
