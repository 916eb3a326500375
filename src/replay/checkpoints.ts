import { eq, inArray } from 'drizzle-orm'
import type { Executor } from '../store/database.ts'
import { projectionCheckpoints } from '../store/schema.ts'

// projectEvents keeps a table's checkpoint with its rows; these move it along with the table.

export async function readCheckpoint(db: Executor, projection: string): Promise<bigint | undefined> {
  const [row] = await db
    .select({ position: projectionCheckpoints.position })
    .from(projectionCheckpoints)
    .where(eq(projectionCheckpoints.projection, projection))
  return row?.position
}

export async function replaceCheckpoint(db: Executor, from: string, to: string, position: bigint) {
  await db.delete(projectionCheckpoints).where(inArray(projectionCheckpoints.projection, [from, to]))
  await db.insert(projectionCheckpoints).values({ projection: to, position })
}

export async function dropCheckpoint(db: Executor, projection: string): Promise<void> {
  await db.delete(projectionCheckpoints).where(eq(projectionCheckpoints.projection, projection))
}
