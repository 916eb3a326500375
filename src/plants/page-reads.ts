import { sql } from 'drizzle-orm'
import { groupCommit } from '../event-log/group-commit.ts'
import { ownerGenerations, plants } from '../event-log/schema.ts'
import { type Executor, preparedQuery } from '../store/database.ts'
import type { ListingVersion } from './etag.ts'

// What a listing reads where no position is to be checked (the primary): the owner's version (head
// and generation, etag.ts), and a page of up to `count` plants from position `from` on, as its JSON
// text, with where the next page starts.
export type PageRead = { owner: string; from: bigint; count: number }
export type PageFound = ListingVersion & { body: string; next?: bigint }
export type PlainReads = {
  version: (owner: string) => Promise<ListingVersion>
  page: (read: PageRead) => Promise<PageFound>
}

// Pages as large as this wait for no other; larger ones are read alone, so that a batch's text,
// held at once, stays small whatever the plants' names.
const GROUPED_PAGE_SIZE = 100
const MAX_BATCH_SIZE = 32

// Each read by a statement of its own.
export function singleReads(db: Executor): PlainReads {
  return {
    version: async (owner) => (await readVersions(db, [owner]))[0] as ListingVersion,
    page: async (read) => (await readPages(db, [read]))[0] as PageFound,
  }
}

// Reads that arrive while a batch is in the database share the next one: one statement, one
// snapshot, one round trip for all of them (as creates do, log/group-commit.ts). A statement costs
// PostgreSQL and the driver far more than the index probes of one page in it.
export function groupedReads(db: Executor, inFlight: number): PlainReads {
  const options = { maxBatchSize: MAX_BATCH_SIZE, inFlight, idleStart: 'microtask' } as const
  const version = groupCommit(async (owners: string[]) => fulfilled(await readVersions(db, owners)), options)
  const page = groupCommit(async (reads: PageRead[]) => fulfilled(await readPages(db, reads)), options)
  return {
    version,
    page: async (read) =>
      read.count > GROUPED_PAGE_SIZE ? ((await readPages(db, [read]))[0] as PageFound) : page(read),
  }
}

function fulfilled<Value>(values: Value[]): PromiseFulfilledResult<Value>[] {
  return values.map((value) => ({ status: 'fulfilled', value }))
}

// Each read's row comes from the statement's one snapshot, so a page's rows, head and generation
// agree (the listing's position and tag name exactly the rows it holds).
export async function readPages(db: Executor, reads: PageRead[]): Promise<PageFound[]> {
  const input = reads.map(({ owner, from, count }, i) => ({ i, owner, after: from.toString(), count }))
  const rows = await pagesStatement(db).execute({ reads: JSON.stringify(input) })
  if (rows.length !== reads.length) throw new Error('a batch of pages gave a row per page asked for')
  return rows.map((row) => ({
    position: BigInt(row.head),
    generation: BigInt(row.generation),
    body: row.body,
    next: row.next === null ? undefined : BigInt(row.next),
  }))
}

// What a conditional request reads before any row: two index probes per owner, no row read.
export async function readVersions(db: Executor, owners: string[]): Promise<ListingVersion[]> {
  const input = owners.map((owner, i) => ({ i, owner }))
  const rows = await versionsStatement(db).execute({ owners: JSON.stringify(input) })
  if (rows.length !== owners.length) throw new Error('a batch of versions gave a row per owner asked for')
  return rows.map((row) => ({ position: BigInt(row.head), generation: BigInt(row.generation) }))
}

// The owner's head and generation, each an index probe.
const head = sql`(select coalesce(max(${plants.position}), 0) from ${plants} where ${plants.owner} = r.owner)::text`
const generation = sql`coalesce((select ${ownerGenerations.generation} from ${ownerGenerations}
                                 where ${ownerGenerations.owner} = r.owner), 0)::text`
const versionColumns = {
  i: sql<number>`i`.as('i'),
  head: sql<string>`head`.as('head'),
  generation: sql<string>`generation`.as('generation'),
}

const versionsStatement = preparedQuery((db) => {
  const versions = db.$with('versions', versionColumns).as(sql`
    select r.i, ${head} as head, ${generation} as generation
    from json_to_recordset(${sql.placeholder('owners')}::json) as r(i int, owner text)`)
  return db.with(versions).select().from(versions).orderBy(sql`${versions.i}`).prepare('plants_versions')
})

// One row per page, in the order asked. Every part is an index probe or a range scan of the
// (owner, position) index, whatever the parameters (a generic plan, planned once). PostgreSQL
// writes each page's JSON text as JSON.stringify would (to_json escapes as it does), so the
// service decodes one text per page and serialises nothing. Positions travel as decimal text.
const pagesStatement = preparedQuery((db) => {
  const plant = sql`'{"name":' || to_json(found.name)::text || coalesce(',"tag":' || to_json(found.tag)::text, '') || '}'`
  const pages = db
    .$with('pages', {
      ...versionColumns,
      body: sql<string>`body`.as('body'),
      next: sql<string | null>`next`.as('next'),
    })
    .as(sql`
      select r.i, ${head} as head, ${generation} as generation,
             (select coalesce('[' || string_agg(${plant}, ',' order by found.position) || ']', '[]')
              from (select ${plants.name} as name, ${plants.tag} as tag, ${plants.position} as position
                    from ${plants}
                    where ${plants.owner} = r.owner and ${plants.position} >= r.after
                    order by ${plants.position}
                    limit r.count) as found) as body,
             (select ${plants.position} from ${plants}
              where ${plants.owner} = r.owner and ${plants.position} >= r.after
              order by ${plants.position}
              offset r.count limit 1)::text as next
      from json_to_recordset(${sql.placeholder('reads')}::json) as r(i int, owner text, after bigint, count int)`)
  return db.with(pages).select().from(pages).orderBy(sql`${pages.i}`).prepare('plants_pages')
})
