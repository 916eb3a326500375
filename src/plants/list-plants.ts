import { and, asc, eq, gte, sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from '../store/database.ts'
import { events, plants } from '../store/schema.ts'
import type { PlantView } from './schemas.ts'

export type ListRequest = { owner: string; limit?: number; from?: bigint }

// A short page is read at once; a long listing yields batches as they are pulled. `next` is
// where the following page starts, if any. `position` is the owner's head as the (first) read saw
// it: the position of their latest plant in the snapshot that produced the rows (CONTRACT §9).
export type PlantListing =
  | { kind: 'page'; plants: PlantView[]; next?: bigint; position: bigint }
  | { kind: 'stream'; batches: AsyncIterable<PlantView[]>; next?: bigint; position: bigint }

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
    const { event, rows, head } = await read(from, undefined, limit + 1)
    if (event !== 'seen') return { kind: 'uncovered', event }
    const after = rows.length > limit ? rows[limit]?.position : undefined
    const next = after === undefined ? undefined : BigInt(after)
    return { kind: 'page', plants: rows.slice(0, limit).map(toPlantView), next, position: head }
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
  return { kind: 'stream', batches: batchesFrom(read, first.rows, next), next, position: first.head }
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
type Batch = { event: 'seen' | 'absent' | 'other'; rows: Row[]; head: bigint }

// One statement, so one snapshot, answers three things: the rows; the owner's head (§9's
// position); and whether the caller's event at `covering` is visible (§10; `0` asks nothing).
// Rows come only when it is; with no rows there is still one row carrying head and event.
// Prepared and built once per executor: a page is one round trip. Positions travel as decimal
// text, exact whatever the driver does.
const batchStatement = (bounded: boolean) =>
  preparedQuery((db) => {
    const columns = {
      name: sql<string | null>`name`.as('name'),
      tag: sql<string | null>`tag`.as('tag'),
      position: sql<string | null>`position`.as('position'),
      head: sql<string>`head`.as('head'),
      event: sql<Batch['event']>`event`.as('event'),
    }
    const owner = sql`${sql.placeholder('owner')}::text`
    const covering = sql`${sql.placeholder('covering')}::bigint`
    const batch = db.$with('batch', columns).as(sql`
      select page.name, page.tag, page.position::text as position, head.position::text as head, covered.event
      from (select coalesce(max(${plants.position}), 0) as position from ${plants} where ${plants.owner} = ${owner}) as head
      cross join (
        select case when ${covering} = 0 then 'seen'
                    else coalesce((select case when ${events.metadata}->>'owner' = ${owner} then 'seen' else 'other' end
                                   from ${events} where ${events.position} = ${covering}), 'absent')
               end as event) as covered
      left join lateral (
        select ${plants.name} as name, ${plants.tag} as tag, ${plants.position} as position
        from ${plants}
        where ${plants.owner} = ${owner} and ${plants.position} >= ${sql.placeholder('from')}::bigint
          ${bounded ? sql`and ${plants.position} < ${sql.placeholder('until')}::bigint` : sql``}
        order by ${plants.position}
        limit ${sql.placeholder('count')}) as page on covered.event = 'seen'`)
    return db
      .with(batch)
      .select()
      .from(batch)
      .orderBy(sql`${batch.position}::bigint`)
      .prepare(bounded ? 'plants_range' : 'plants_page')
  })
const readPage = batchStatement(false)
const readRange = batchStatement(true)

type BatchRequest = { owner: string; from: bigint; until?: bigint; count: number; covering: bigint }

async function readBatch(
  db: Executor,
  { owner, from, until, count, covering }: BatchRequest,
): Promise<Batch> {
  const values = { owner, from: from.toString(), count, covering: covering.toString() }
  const found =
    until === undefined
      ? await readPage(db).execute(values)
      : await readRange(db).execute({ ...values, until: until.toString() })
  const first = found[0]
  return {
    event: first?.event ?? 'absent',
    head: BigInt(first?.head ?? '0'),
    rows: found.filter((row): row is Row & typeof row => row.position !== null),
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
