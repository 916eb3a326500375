import { and, asc, eq, gte, sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from '../database/database.ts'
import { plants } from '../event-log/schema.ts'
import type { ListingVersion } from './etag.ts'
import {
  type Covered,
  coveringEvent,
  NO_END,
  ownerGeneration,
  ownerHead,
  pageJson,
  plantArrays,
  plantColumns,
  plantRange,
  versionColumns,
} from './listing-sql.ts'

// The statements of a listing read wherever a position may be checked (a replica), and of a long
// listing's batches. Each reads, in its one snapshot, the owner's version (head and generation,
// etag.ts) and whether the caller's event at `covering` is visible (read-your-writes; `0` asks
// nothing), and reads rows only when it is. Prepared and built once per executor: a read is one
// round trip.

export type Row = { name: string; tag: string | null; position: string }
export type Batch = ListingVersion & { event: Covered; rows: Row[] }
export type Page = ListingVersion & { event: Covered; body: string; next?: bigint }
export type CoveredRead = { owner: string; from: bigint; count: number; covering: bigint }

const owner = sql`${sql.placeholder('owner')}::text`
const from = sql`${sql.placeholder('from')}::bigint`
const count = sql`${sql.placeholder('count')}::int`

// One row: the version and the event.
const version = sql`select ${ownerHead(owner)} as head, ${ownerGeneration(owner)} as generation,
                           ${coveringEvent(owner, sql`${sql.placeholder('covering')}::bigint`)} as event`

const coveredColumns = { ...versionColumns, event: sql<Covered>`event`.as('event') }

// Rows from `from` to before `until`; with no rows, still one row carrying the version.
const batchStatement = preparedQuery((db) => {
  const until = sql`${sql.placeholder('until')}::bigint`
  const batch = db
    .$with('batch', {
      ...coveredColumns,
      name: sql<string | null>`name`.as('name'),
      tag: sql<string | null>`tag`.as('tag'),
      position: sql<string | null>`position`.as('position'),
    })
    .as(sql`
        select found.name, found.tag, found.position::text as position, version.head, version.generation, version.event
        from (${version}) as version
        left join lateral (select ${plantColumns} ${plantRange(owner, from, until)} limit ${count}) as found
          on version.event = 'seen'`)
  return db.with(batch).select().from(batch).orderBy(sql`${batch.position}::bigint`).prepare('plants_batch')
})

export async function readBatch(db: Executor, read: CoveredRead & { until?: bigint }): Promise<Batch> {
  const until = (read.until ?? NO_END).toString()
  const found = await batchStatement(db).execute({ ...valuesOf(read), until })
  return {
    ...versionFrom(found[0]),
    rows: found.filter((row): row is Row & typeof row => row.position !== null),
  }
}

// A page in one row: the version and, when the caller's event is seen, the page's JSON text and
// where the next page starts, from one range scan of `count` + 1 rows (page-statements.ts reads
// pages that check no position the same way).
const pageStatement = preparedQuery((db) => {
  const page = db
    .$with('page', {
      ...coveredColumns,
      body: sql<string | null>`body`.as('body'),
      next: sql<string | null>`next`.as('next'),
    })
    .as(sql`
      select version.head, version.generation, version.event,
             ${pageJson(count)} as body, found.positions[${count} + 1]::text as next
      from (${version}) as version
      left join lateral (${plantArrays(owner, from, sql`${count} + 1`)}) as found
        on version.event = 'seen'`)
  return db.with(page).select().from(page).prepare('plants_page_covering')
})

export async function readPage(db: Executor, read: CoveredRead): Promise<Page> {
  const [found] = await pageStatement(db).execute(valuesOf(read))
  return {
    ...versionFrom(found),
    body: found?.body ?? '[]',
    next: found?.next ? BigInt(found.next) : undefined,
  }
}

// What a conditional request that names a position reads before it reads any row.
const versionStatement = preparedQuery((db) => {
  const found = db.$with('version', coveredColumns).as(version)
  return db.with(found).select().from(found).prepare('plants_version_covering')
})

export async function readVersion(db: Executor, owner: string, covering: bigint) {
  const [found] = await versionStatement(db).execute({ owner, covering: covering.toString() })
  return versionFrom(found)
}

// Where a bounded listing of `skip` plants from `from` on ends.
export async function positionAfter(db: Executor, owner: string, from: bigint, skip: number) {
  const [row] = await db
    .select({ position: plants.position })
    .from(plants)
    .where(and(eq(plants.owner, owner), gte(plants.position, from)))
    .orderBy(asc(plants.position))
    .offset(skip)
    .limit(1)
  return row?.position
}

function valuesOf({ owner, from, count, covering }: CoveredRead) {
  return { owner, from: from.toString(), count, covering: covering.toString() }
}

function versionFrom(row: { head: string; generation: string; event: Covered } | undefined) {
  return {
    event: row?.event ?? 'absent',
    position: BigInt(row?.head ?? '0'),
    generation: BigInt(row?.generation ?? '0'),
  }
}
