import { sql, TransactionRollbackError } from 'drizzle-orm'
import type { Database } from '../store/database.ts'
import { projectWholeLog } from '../store/event-log.ts'
import { projectInto } from '../store/event-store.ts'
import { plants, plantsTable } from '../store/schema.ts'
import { diffProjection, type ProjectionDiff } from './projection-diff.ts'

export type Verification = { events: number; diff: ProjectionDiff }

// Folds the log through the live projection into a temporary table and compares it with
// `plants`. One REPEATABLE READ snapshot sees the log and the projection at the same instant
// (appends project in their own transaction), so writes landing meanwhile cause no false drift.
// Nothing is kept: the transaction is rolled back.
export async function verifyProjection(db: Database): Promise<Verification> {
  let verification: Verification | undefined
  try {
    await db.transaction(
      async (tx) => {
        await tx.execute(sql`create temp table plants_expected (like plants including all)`)
        const expected = plantsTable('plants_expected')
        const events = await projectWholeLog(tx, projectInto(expected))
        verification = { events, diff: await diffProjection(tx, expected, plants) }
        tx.rollback()
      },
      { isolationLevel: 'repeatable read' },
    )
  } catch (error) {
    if (!(error instanceof TransactionRollbackError)) throw error
  }
  if (!verification) throw new Error('verification did not complete')
  return verification
}
