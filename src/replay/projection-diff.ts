import { type AnyColumn, and, count, eq, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Executor } from '../store/database.ts'
import type { PlantsTable } from '../store/schema.ts'

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
  const join = and(eq(other.owner, from.owner), eq(other.id, from.id))
  const where = isNull(other.owner)
  const [total] = await db.select({ count: count() }).from(from).leftJoin(other, join).where(where)
  const examples = await db
    .select(columns(from))
    .from(from)
    .leftJoin(other, join)
    .where(where)
    .orderBy(from.position)
    .limit(limit)
  return { count: total?.count ?? 0, examples }
}

async function differing(db: Executor, expected: PlantsTable, actual: PlantsTable, limit: number) {
  const join = and(eq(actual.owner, expected.owner), eq(actual.id, expected.id))
  const where = or(
    distinct(expected.name, actual.name),
    distinct(expected.tag, actual.tag),
    distinct(expected.position, actual.position),
  )
  const [total] = await db.select({ count: count() }).from(expected).innerJoin(actual, join).where(where)
  const examples = await db
    .select({ expected: columns(expected), actual: columns(actual) })
    .from(expected)
    .innerJoin(actual, join)
    .where(where)
    .orderBy(expected.position)
    .limit(limit)
  return { count: total?.count ?? 0, examples }
}

function distinct(left: AnyColumn, right: AnyColumn): SQL {
  return sql`${left} is distinct from ${right}`
}

function columns(table: PlantsTable) {
  return { owner: table.owner, id: table.id, name: table.name, tag: table.tag, position: table.position }
}
