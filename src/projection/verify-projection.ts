import { and, eq, getTableColumns, isNull, sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import { type Database, type Executor, rowsOf } from '../database/database.ts'
import { plantRowOf } from '../event-log/plant-rows.ts'
import { type FoldRowArray, foldRow, openFoldRow, withKeys } from '../event-log/reading.ts'
import { events as eventsTable, type PlantsTable, plants } from '../event-log/schema.ts'
import type { UnfitEvent } from '../event-log/sealed-parts.ts'
import type { Drift, ProjectionDiff } from './projection-diff.ts'
import { createRowComparer, type RowComparer } from './row-comparer.ts'

// `unfit`: how many events did not open or fit (event-log/sealed-parts.ts); each was handed to
// `onUnfit` and folded into nothing.
export type Verification = { events: number; unfit: number; diff: ProjectionDiff }

// Folds the log, opened in the service, and compares the fold with `plants` as both stream by: one
// cursor reads every event (with its owner's key) and every row of `plants`, ordered by owner and
// position, a batch at a time; each event is opened and its row handed to a comparer
// (row-comparer.ts) beside the projection's. So memory holds two batches (the next is fetched
// while one is compared) and the unmatched rows of one owner, whatever the number of events and
// owners, and each owner's key is unwrapped once (the keyring keeps it while that owner's events
// pass). One REPEATABLE READ snapshot sees the log and the projection at the same instant
// (appends project in their own transaction), so writes landing meanwhile cause no false drift;
// every event the snapshot sees is folded, settled or not. Nothing is written.
export type VerifyOptions = {
  batchSize?: number
  // After each batch read: how many events so far, of how many the snapshot holds.
  onProgress?: (progress: { events: number; total: number }) => void
  onUnfit?: (unfit: UnfitEvent) => void
}

export async function verifyProjection(
  db: Database,
  keyring: Keyring,
  // A fetch of 2,000 lines (events and rows, about 1 MB) costs no more a line than one of 10,000
  // and holds a fifth of the memory.
  { batchSize = 2_000, onProgress, onUnfit }: VerifyOptions = {},
): Promise<Verification> {
  return db.transaction(
    async (tx) => {
      const total = onProgress ? await tx.$count(eventsTable) : 0
      const comparer = createRowComparer()
      let events = 0
      let unfit = 0
      const countUnfit = (event: UnfitEvent) => {
        unfit++
        onUnfit?.(event)
      }
      await tx.execute(sql`declare verified_rows no scroll cursor for ${bothSidesByOwner}`)
      const fetchLines = async () =>
        rowsOf<{ line: string }>(
          await tx.execute(sql`fetch forward ${sql.raw(String(batchSize))} from verified_rows`),
        )
      let next = fetchLines()
      for (;;) {
        const found = await next
        if (found.length === 0) break
        // PostgreSQL prepares the next batch while this one is opened and compared: the fetch is
        // sent (a turn of the event loop) before the work starts.
        next = fetchLines()
        // Awaited on the next turn; a failure meanwhile is not an unhandled one.
        next.catch(() => {})
        await new Promise((sent) => setImmediate(sent))
        events += compareLines(found, keyring, comparer, countUnfit)
        onProgress?.({ events, total: Math.max(total, events) })
      }
      return { events, unfit, diff: comparer.finish() }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  )
}

// Every event, as a fold reads it (`[0, foldRow]`), and every row of `plants`
// (`[1, owner, id, name, tag, position]`), ordered by owner, then position, an event before the
// row it makes: so an owner's key serves all their events at once, and a row of the projection
// that matches comes right after its event. Bytewise ("C") order: the cheapest sort.
const bothSidesByOwner = sql`
  select line from (
    select k.owner as owner, ${eventsTable.position} as position, 0 as side,
      json_build_array(0, ${foldRow})::text as line
    from ${eventsTable} ${withKeys}
    union all
    select owner, position, 1, json_build_array(1, owner, id::text, name, tag, position::text)::text
    from ${plants}) as both_sides
  order by owner collate "C" nulls last, position, side`

type Line = [0, FoldRowArray] | [1, string, string, string, string | null, string]

// Hands each line of a batch to the comparer in order, each event opened first; returns how
// many events the batch held.
function compareLines(
  found: { line: string }[],
  keyring: Keyring,
  comparer: RowComparer,
  onUnfit: (event: UnfitEvent) => void,
): number {
  const lines = JSON.parse(`[${found.map(({ line }) => line).join(',')}]`) as Line[]
  let events = 0
  for (const line of lines) {
    if (line[0] === 1) {
      const [, owner, id, name, tag, position] = line
      comparer.actual({ owner, id: BigInt(id), name, tag, position: BigInt(position) })
      continue
    }
    events++
    const row = line[1]
    const event = openFoldRow(keyring, BigInt(row[1]), row, onUnfit)
    const planted = event && plantRowOf(event)
    if (planted) comparer.expected({ ...planted, id: BigInt(planted.id), position: event.position })
  }
  return events
}

export function isInSync(diff: ProjectionDiff): boolean {
  return diff.missing.count === 0 && diff.extra.count === 0 && diff.changed.count === 0
}

// Two tables compared in the database, set-based (a rebuild's dry run: projection/rebuild-projection.ts).
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
