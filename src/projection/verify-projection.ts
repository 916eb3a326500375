import { and, eq, getTableColumns, isNull, sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import type { Database, Executor } from '../database/database.ts'
import { foldLog } from '../event-log/plant-rows.ts'
import { LOG_START } from '../event-log/reading.ts'
import { events as eventsTable, type PlantsTable, plants, plantsTable } from '../event-log/schema.ts'
import type { UnfitEvent } from '../event-log/sealed-parts.ts'

// `unfit`: how many events did not open or fit (event-log/sealed-parts.ts); each was handed to
// `onUnfit` and folded into nothing.
export type Verification = { events: number; unfit: number; diff: ProjectionDiff }

// Folds the log, opened in the service batch by batch (event-log/plant-rows.ts), into a temporary
// table and compares it with `plants`. One REPEATABLE READ snapshot sees the log and the projection
// at the same instant (appends project in their own transaction), so writes landing meanwhile
// cause no false drift; every event the snapshot sees is folded, settled or not. Nothing is kept:
// the table is dropped when the transaction ends.
export type VerifyOptions = {
  batchSize?: number
  // After each batch folded: how many events so far, of how many the snapshot holds.
  onProgress?: (progress: { events: number; total: number }) => void
  // Once the log is folded, before the comparison with the projection.
  onCompare?: () => void
  onUnfit?: (unfit: UnfitEvent) => void
}

export async function verifyProjection(
  db: Database,
  keyring: Keyring,
  { batchSize = 10_000, onProgress, onCompare, onUnfit }: VerifyOptions = {},
): Promise<Verification> {
  return db.transaction(
    async (tx) => {
      await tx.execute(sql`create temp table plants_expected (like plants including all) on commit drop`)
      const expected = plantsTable('plants_expected')
      const total = onProgress ? await tx.$count(eventsTable) : 0
      let folded = 0
      let unfit = 0
      const { events } = await foldLog(tx, keyring, expected, LOG_START, batchSize, {
        settled: false,
        onUnfit: (event) => {
          unfit++
          onUnfit?.(event)
        },
        onBatch: (batch) => {
          folded += batch.events
          onProgress?.({ events: folded, total: Math.max(total, folded) })
        },
      })
      onCompare?.()
      return { events, unfit, diff: await diffProjection(tx, expected, plants) }
    },
    { isolationLevel: 'repeatable read' },
  )
}

export type ProjectionRow = typeof plants.$inferSelect

export type Drift<Example> = { count: number; examples: Example[] }

// How `actual` differs from `expected`, keyed by (owner, id): rows it lacks, rows it should not
// have, and rows whose values differ. Set-based, so memory stays flat whatever the size.
export type ProjectionDiff = {
  missing: Drift<ProjectionRow>
  extra: Drift<ProjectionRow>
  changed: Drift<{ expected: ProjectionRow; actual: ProjectionRow }>
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
    .select({ ...getTableColumns(from), total })
    .from(from)
    .leftJoin(other, and(eq(other.owner, from.owner), eq(other.id, from.id)))
    .where(isNull(other.owner))
    .orderBy(from.position)
    .limit(limit)
  return drift(rows)
}

async function differing(db: Executor, expected: PlantsTable, actual: PlantsTable, limit: number) {
  const rows = await db
    .select({ expected: getTableColumns(expected), actual: getTableColumns(actual), total })
    .from(expected)
    .innerJoin(actual, and(eq(actual.owner, expected.owner), eq(actual.id, expected.id)))
    .where(
      sql`(${expected.name}, ${expected.tag}, ${expected.position}) is distinct from (${actual.name}, ${actual.tag}, ${actual.position})`,
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
