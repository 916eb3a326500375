import { type AnyColumn, and, eq, isNull, or, type SQL, sql, TransactionRollbackError } from 'drizzle-orm'
import { projectInto } from '../plants/projection.ts'
import type { Database, Executor } from '../store/database.ts'
import { projectWholeLog } from '../store/event-log.ts'
import { type PlantsTable, plants, plantsTable } from '../store/schema.ts'

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

export type PlantRow = { owner: string; id: bigint; name: string; tag: string | null; position: bigint }

export type Drift<Example> = { count: number; examples: Example[] }

// How `actual` differs from `expected`, keyed by (owner, id): rows it lacks, rows it should not
// have, and rows whose values differ. Set-based, so memory stays flat whatever the size.
export type ProjectionDiff = {
  missing: Drift<PlantRow>
  extra: Drift<PlantRow>
  changed: Drift<{ expected: PlantRow; actual: PlantRow }>
}

export function isInSync(diff: ProjectionDiff): boolean {
  return diff.missing.count === 0 && diff.extra.count === 0 && diff.changed.count === 0
}

export async function diffProjection(
  db: Executor,
  expected: PlantsTable,
  actual: PlantsTable,
  exampleCount = 3,
): Promise<ProjectionDiff> {
  const [missing, extra, changed] = await Promise.all([
    absentFrom(db, expected, actual, exampleCount),
    absentFrom(db, actual, expected, exampleCount),
    differing(db, expected, actual, exampleCount),
  ])
  return { missing, extra, changed }
}

async function absentFrom(db: Executor, from: PlantsTable, other: PlantsTable, limit: number) {
  const rows = await db
    .select({ ...columns(from), total })
    .from(from)
    .leftJoin(other, and(eq(other.owner, from.owner), eq(other.id, from.id)))
    .where(isNull(other.owner))
    .orderBy(from.position)
    .limit(limit)
  return drift(rows)
}

async function differing(db: Executor, expected: PlantsTable, actual: PlantsTable, limit: number) {
  const rows = await db
    .select({ expected: columns(expected), actual: columns(actual), total })
    .from(expected)
    .innerJoin(actual, and(eq(actual.owner, expected.owner), eq(actual.id, expected.id)))
    .where(
      or(
        distinct(expected.name, actual.name),
        distinct(expected.tag, actual.tag),
        distinct(expected.position, actual.position),
      ),
    )
    .orderBy(expected.position)
    .limit(limit)
  return drift(rows)
}

// Every matching row is counted before the limit keeps the first few: one query per kind of drift.
const total = sql<number>`count(*) over ()`.mapWith(Number)

function drift<Row extends { total: number }>(rows: Row[]): Drift<Omit<Row, 'total'>> {
  return { count: rows[0]?.total ?? 0, examples: rows.map(({ total: _, ...example }) => example) }
}

function distinct(left: AnyColumn, right: AnyColumn): SQL {
  return sql`${left} is distinct from ${right}`
}

function columns(table: PlantsTable) {
  return { owner: table.owner, id: table.id, name: table.name, tag: table.tag, position: table.position }
}
