import { and, asc, eq, gte, sql } from 'drizzle-orm'
import { type Executor, preparedStatement } from '../store/database.ts'
import { events, plants } from '../store/schema.ts'
import type { PlantView } from './schemas.ts'

export type ListRequest = { owner: string; limit?: number; from?: bigint }

// A short page is read at once; a long listing yields batches as they are pulled. `next` is
// where the following page starts, if any.
export type PlantListing =
  | { kind: 'page'; plants: PlantView[]; next?: bigint }
  | { kind: 'stream'; batches: AsyncIterable<PlantView[]>; next?: bigint }

// The read did not see the caller's event at the position asked for: it is not there yet
// (`absent`), or that position is another owner's event (`other`), which no wait will change.
export type Uncovered = { kind: 'uncovered'; event: 'absent' | 'other' }

const BATCH_SIZE = 1000

// Work grows with the page, not with the store: every query is a range scan of the
// (owner, position) index. Long listings are read in batches so memory stays flat.
export async function listPlants(db: Executor, request: ListRequest): Promise<PlantListing> {
  const listing = await readListing(db, request, 0n)
  if (listing.kind === 'uncovered') throw new Error('a listing that asks for no position is always covered')
  return listing
}

// The same listing, read only if it shows the caller's event at `covering` (read-your-writes on a
// replica, CONTRACT §10): each statement checks that in its own snapshot, beside the rows.
export function listPlantsCovering(
  db: Executor,
  request: ListRequest,
  covering: bigint,
): Promise<PlantListing | Uncovered> {
  return readListing(db, request, covering)
}

async function readListing(
  db: Executor,
  { owner, limit, from = 0n }: ListRequest,
  covering: bigint,
): Promise<PlantListing | Uncovered> {
  const read = (start: bigint, until: bigint | undefined, count: number) =>
    readBatch(db, { owner, from: start, until, count, covering })
  if (limit !== undefined && limit <= BATCH_SIZE) {
    const { event, rows } = await read(from, undefined, limit + 1)
    if (event !== 'seen') return { kind: 'uncovered', event }
    const after = rows.length > limit ? rows[limit]?.position : undefined
    const next = after === undefined ? undefined : BigInt(after)
    return { kind: 'page', plants: rows.slice(0, limit).map(toPlantView), next }
  }
  // Where a bounded listing ends is read only once the caller's writes are seen, or it could
  // end too late and hold more than `limit` plants.
  if (covering > 0n && limit !== undefined) {
    const { event } = await read(from, undefined, 0)
    if (event !== 'seen') return { kind: 'uncovered', event }
  }
  const next = limit === undefined ? undefined : await positionAfter(db, owner, from, limit)
  // The first batch is read before answering, so an unreachable database is still a clean 503.
  const first = await read(from, next, BATCH_SIZE)
  if (first.event !== 'seen') return { kind: 'uncovered', event: first.event }
  return { kind: 'stream', batches: batchesFrom(read, first.rows, next), next }
}

type ReadBatch = (from: bigint, until: bigint | undefined, count: number) => Promise<Batch>

// Every batch reads the caller's event at `covering` in its own snapshot: a replica that went back
// (restarted behind where it was) ends the listing rather than silently leaving plants out.
async function* batchesFrom(read: ReadBatch, first: Row[], until: bigint | undefined) {
  for (let found = first; found.length > 0; ) {
    yield found.map(toPlantView)
    const last = found.at(-1)
    if (found.length < BATCH_SIZE || !last) return
    const batch = await read(BigInt(last.position) + 1n, until, BATCH_SIZE)
    if (batch.event !== 'seen') throw new Error('the replica no longer shows the position it showed')
    found = batch.rows
  }
}

type Row = { name: string; tag: string | null; position: string }
type Batch = { event: 'seen' | 'absent' | 'other'; rows: Row[] }

const batchRows = (bounded: boolean) =>
  sql`select ${plants.name} as name, ${plants.tag} as tag, ${plants.position}::text as position
      from ${plants}
      where ${plants.owner} = ${sql.placeholder('owner')} and ${plants.position} >= ${sql.placeholder('from')}
        ${bounded ? sql`and ${plants.position} < ${sql.placeholder('until')}` : sql``}
      order by ${plants.position}
      limit ${sql.placeholder('count')}`

// Prepared, and built once per executor: a page is one round trip, with no query building and no
// mapping of rows beyond toPlantView. Positions travel as decimal text, exact whatever the driver does.
const batchStatement = (bounded: boolean) =>
  preparedStatement<Row>(bounded ? 'plants_range' : 'plants_page', batchRows(bounded))

// The same rows, and whether the caller's event at `covering` is visible, in one statement and so
// one snapshot: rows are returned only when it is (one row without a plant when there are none).
const coveringStatement = (bounded: boolean) =>
  preparedStatement<{ event: Batch['event'] } & { [Key in keyof Row]: Row[Key] | null }>(
    bounded ? 'plants_range_covering' : 'plants_page_covering',
    sql`select covered.event, page.name, page.tag, page.position
        from (select coalesce((select case when ${events.metadata}->>'owner' = ${sql.placeholder('owner')}
                                           then 'seen' else 'other' end
                               from ${events} where ${events.position} = ${sql.placeholder('covering')}),
                              'absent') as event) as covered
        left join lateral (${batchRows(bounded)}) as page on covered.event = 'seen'`,
  )

const statements = {
  page: batchStatement(false),
  range: batchStatement(true),
  pageCovering: coveringStatement(false),
  rangeCovering: coveringStatement(true),
}

type BatchRequest = { owner: string; from: bigint; until?: bigint; count: number; covering: bigint }

async function readBatch(
  db: Executor,
  { owner, from, until, count, covering }: BatchRequest,
): Promise<Batch> {
  const values: Record<string, unknown> = { owner, from: from.toString(), count }
  if (until !== undefined) values.until = until.toString()
  if (covering === 0n) {
    const read = until === undefined ? statements.page : statements.range
    return { event: 'seen', rows: await read(db, values) }
  }
  const read = until === undefined ? statements.pageCovering : statements.rangeCovering
  const found = await read(db, { ...values, covering: covering.toString() })
  return {
    event: found[0]?.event ?? 'absent',
    rows: found.filter((row): row is Row & { event: Batch['event'] } => row.position !== null),
  }
}

async function positionAfter(db: Executor, owner: string, from: bigint, skip: number) {
  const [row] = await db
    .select({ position: plants.position })
    .from(plants)
    .where(and(eq(plants.owner, owner), gte(plants.position, from)))
    .orderBy(asc(plants.position))
    .offset(skip)
    .limit(1)
  return row?.position
}

function toPlantView(row: { name: string; tag: string | null }): PlantView {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag }
}
