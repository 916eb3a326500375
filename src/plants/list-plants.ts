import { and, asc, eq, gte, type SQL, sql } from 'drizzle-orm'
import { events, ownerGenerations, plants } from '../event-log/schema.ts'
import { currentPseudonym } from '../event-log/sealing.ts'
import { type Executor, preparedQuery } from '../store/database.ts'
import type { ListingVersion } from './etag.ts'
import { type PlainReads, singleReads } from './page-reads.ts'
import type { PlantView } from './schemas.ts'

// `unchanged`, for a conditional request: told the owner's version (head and generation, etag.ts)
// before any row is read, it says whether the caller's copy is current.
export type ListRequest = {
  owner: string
  limit?: number
  from?: bigint
  unchanged?: (version: ListingVersion) => boolean
}

// A short page is read at once, as the JSON text of its array; a long listing yields batches as
// they are pulled. `next` is
// where the following page starts, if any. `position` is the owner's head as the (first) read saw
// it: the position of their latest plant in the snapshot that produced the rows (docs/live-changes.md);
// `generation` is the owner's, from the same snapshot. `unchanged`: the request's `unchanged` said
// so, and no row was read.
export type PlantListing = ListingVersion &
  (
    | { kind: 'page'; body: string; next?: bigint }
    | { kind: 'stream'; batches: AsyncIterable<PlantView[]>; next?: bigint }
    | { kind: 'unchanged'; next?: undefined }
  )

// The read did not see the caller's event at the position asked for: it is not there yet
// (`absent`), or that position is another owner's event (`other`), which no wait will change.
export type Uncovered = { kind: 'uncovered'; event: 'absent' | 'other' }

const BATCH_SIZE = 1000

// Work grows with the page, not with the store: every query is a range scan of the
// (owner, position) index. Long listings are read in batches so memory stays flat. A page and a
// conditional request's version are read by `reads` (page-reads.ts: shared with the reads of other
// requests in flight, or each by a statement of its own).
export async function listPlants(
  db: Executor,
  request: ListRequest,
  reads: PlainReads = singleReads(db),
): Promise<PlantListing> {
  const listing = await readListing(db, request, 0n, reads)
  if (listing.kind === 'uncovered') throw new Error('a listing that asks for no position is always covered')
  return listing
}

// The same listing, read only if it shows the caller's event at `covering` (read-your-writes on a
// replica, docs/operating.md, Scaling out): each statement checks that in its own snapshot, beside the rows.
export function listPlantsCovering(
  db: Executor,
  request: ListRequest,
  covering: bigint,
): Promise<PlantListing | Uncovered> {
  return readListing(db, request, covering, covering > 0n ? undefined : singleReads(db))
}

// `reads`: how a version and a page are read when no position is to be checked (`covering` 0).
async function readListing(
  db: Executor,
  { owner, limit, from = 0n, unchanged }: ListRequest,
  covering: bigint,
  reads?: PlainReads,
): Promise<PlantListing | Uncovered> {
  if (unchanged !== undefined) {
    const { event, ...version } = reads
      ? { event: 'seen' as const, ...(await reads.version(owner)) }
      : await readVersion(db, owner, covering)
    if (event !== 'seen') return { kind: 'uncovered', event }
    if (unchanged(version)) return { kind: 'unchanged', ...version }
  }
  const read = (start: bigint, until: bigint | undefined, count: number) =>
    readBatch(db, { owner, from: start, until, count, covering })
  if (limit !== undefined && limit <= BATCH_SIZE) {
    if (!reads) return readPage(db, { owner, from, count: limit, covering })
    return { kind: 'page', ...(await reads.page({ owner, from, count: limit })) }
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
  // The later batches stop at the head the first one saw, so that the listing is what its
  // position and tag name, however many plants are created while it is read.
  const until = next ?? first.head + 1n
  const { head: position, generation } = first
  return { kind: 'stream', batches: batchesFrom(read, first.rows, until), next, position, generation }
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
type Covered = 'seen' | 'absent' | 'other'
type Batch = { event: Covered; rows: Row[]; head: bigint; generation: bigint }

// One statement, so one snapshot, answers three things: the rows; the owner's head (the
// Plant-Store-Position a listing answers); and whether the caller's event at `covering` is visible
// (read-your-writes, docs/operating.md; `0` asks nothing).
// Rows come only when it is; with no rows there is still one row carrying head and event.
// Prepared and built once per executor: a page is one round trip. Positions travel as decimal
// text, exact whatever the driver does.
const batchStatement = (bounded: boolean, covering: boolean) =>
  preparedQuery((db) => {
    const columns = {
      name: sql<string | null>`name`.as('name'),
      tag: sql<string | null>`tag`.as('tag'),
      position: sql<string | null>`position`.as('position'),
      head: sql<string>`head`.as('head'),
      generation: sql<string>`generation`.as('generation'),
      event: sql<Covered>`event`.as('event'),
    }
    const owner = sql`${sql.placeholder('owner')}::text`
    const batch = db.$with('batch', columns).as(sql`
      select page.name, page.tag, page.position::text as position, version.head, version.generation, version.event
      from (${versionOf(owner, covering)}) as version
      left join lateral (
        select ${plants.name} as name, ${plants.tag} as tag, ${plants.position} as position
        from ${plants}
        where ${plants.owner} = ${owner} and ${plants.position} >= ${sql.placeholder('from')}::bigint
          ${bounded ? sql`and ${plants.position} < ${sql.placeholder('until')}::bigint` : sql``}
        order by ${plants.position}
        limit ${sql.placeholder('count')}) as page on version.event = 'seen'`)
    return db
      .with(batch)
      .select()
      .from(batch)
      .orderBy(sql`${batch.position}::bigint`)
      .prepare(`plants_${bounded ? 'range' : 'batch'}${covering ? '_covering' : ''}`)
  })
const batchStatements = {
  plain: { open: batchStatement(false, false), bounded: batchStatement(true, false) },
  covering: { open: batchStatement(false, true), bounded: batchStatement(true, true) },
}

type BatchRequest = { owner: string; from: bigint; until?: bigint; count: number; covering: bigint }

async function readBatch(
  db: Executor,
  { owner, from, until, count, covering }: BatchRequest,
): Promise<Batch> {
  const values = { owner, from: from.toString(), count, covering: covering.toString() }
  const statements = covering > 0n ? batchStatements.covering : batchStatements.plain
  const found =
    until === undefined
      ? await statements.open(db).execute(values)
      : await statements.bounded(db).execute({ ...values, until: until.toString() })
  const first = found[0]
  return {
    event: first?.event ?? 'absent',
    head: BigInt(first?.head ?? '0'),
    generation: BigInt(first?.generation ?? '0'),
    rows: found.filter((row): row is Row & typeof row => row.position !== null),
  }
}

// One row: the owner's head and generation, each an index probe; and, only in the statements of
// a request that sent a position (`covering`), whether the caller's event at that position is
// visible (read-your-writes), a probe of the events' primary key.
function versionOf(owner: SQL, covering: boolean): SQL {
  const position = sql`${sql.placeholder('covering')}::bigint`
  const event = covering
    ? sql`coalesce((select case when ${events.metadata}->>'pseudonym' = ${currentPseudonym(owner)} then 'seen' else 'other' end
                    from ${events} where ${events.position} = ${position}), 'absent')`
    : sql`'seen'`
  return sql`
    select (select coalesce(max(${plants.position}), 0) from ${plants} where ${plants.owner} = ${owner})::text as head,
           coalesce((select ${ownerGenerations.generation} from ${ownerGenerations}
                     where ${ownerGenerations.owner} = ${owner}), 0)::text as generation,
           ${event} as event`
}

const versionColumns = {
  head: sql<string>`head`.as('head'),
  generation: sql<string>`generation`.as('generation'),
  event: sql<Covered>`event`.as('event'),
}

// What a conditional request that names a position reads before it reads any row (page-reads.ts
// reads it for those that do not).
const versionStatement = preparedQuery((db) => {
  const version = db
    .$with('version', versionColumns)
    .as(versionOf(sql`${sql.placeholder('owner')}::text`, true))
  return db.with(version).select().from(version).prepare('plants_version_covering')
})

// A page that names a position, in one row: the version and, when the caller's event is seen, the
// page's JSON text, written by PostgreSQL as JSON.stringify would write it (to_json escapes as it
// does), and where the next page starts (page-reads.ts reads pages that name none).
const pageStatement = preparedQuery((db) => {
  const owner = sql`${sql.placeholder('owner')}::text`
  const count = sql`${sql.placeholder('count')}::int`
  const plant = sql`'{"name":' || to_json(found.name)::text || coalesce(',"tag":' || to_json(found.tag)::text, '') || '}'`
  const page = db
    .$with('page', {
      ...versionColumns,
      body: sql<string | null>`body`.as('body'),
      next: sql<string | null>`next`.as('next'),
    })
    .as(sql`
        select version.head, version.generation, version.event, page.body, page.next
        from (${versionOf(owner, true)}) as version
        left join lateral (
          select coalesce('[' || string_agg(${plant}, ',' order by found.position) filter (where found.n <= ${count}) || ']', '[]') as body,
                 (max(found.position) filter (where found.n > ${count}))::text as next
          from (select ${plants.name} as name, ${plants.tag} as tag, ${plants.position} as position,
                       row_number() over (order by ${plants.position}) as n
                from ${plants}
                where ${plants.owner} = ${owner} and ${plants.position} >= ${sql.placeholder('from')}::bigint
                order by ${plants.position}
                limit ${count} + 1) as found) as page on version.event = 'seen'`)
  return db.with(page).select().from(page).prepare('plants_page_covering')
})

type PageRequest = { owner: string; from: bigint; count: number; covering: bigint }

async function readPage(
  db: Executor,
  { owner, from, count, covering }: PageRequest,
): Promise<PlantListing | Uncovered> {
  const values = { owner, from: from.toString(), count, covering: covering.toString() }
  const [found] = await pageStatement(db).execute(values)
  const event = found?.event ?? 'absent'
  if (event !== 'seen') return { kind: 'uncovered', event }
  return {
    kind: 'page',
    body: found?.body ?? '[]',
    next: found?.next ? BigInt(found.next) : undefined,
    position: BigInt(found?.head ?? '0'),
    generation: BigInt(found?.generation ?? '0'),
  }
}

async function readVersion(
  db: Executor,
  owner: string,
  covering: bigint,
): Promise<ListingVersion & { event: Covered }> {
  const [found] = await versionStatement(db).execute({ owner, covering: covering.toString() })
  return {
    event: found?.event ?? 'absent',
    position: BigInt(found?.head ?? '0'),
    generation: BigInt(found?.generation ?? '0'),
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
