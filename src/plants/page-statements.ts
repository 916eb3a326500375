import { sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from '../database/database.ts'
import type { ListingVersion } from './etag.ts'
import { ownerGeneration, ownerHead, pageJson, plantArrays, versionColumns } from './listing-sql.ts'

// What a listing reads where no position is to be checked (the primary): the owner's version (head
// and generation, etag.ts), and a page of up to `count` plants from position `from` on, as its JSON
// text, with where the next page starts. Each statement reads any number of them at once.
export type PageRead = { owner: string; from: bigint; count: number }
export type PageFound = ListingVersion & { body: string; next?: bigint }
export type PlainReads = {
  version: (owner: string) => Promise<ListingVersion>
  page: (read: PageRead) => Promise<PageFound>
}

// Each read by a statement of its own (page-groups.ts shares them between requests).
export function singleReads(db: Executor): PlainReads {
  return {
    version: async (owner) => (await readVersions(db, [owner]))[0] as ListingVersion,
    page: async (read) => (await readPages(db, [read]))[0] as PageFound,
  }
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

const owner = sql`r.owner`
const groupColumns = { i: sql<number>`i`.as('i'), ...versionColumns }

const versionsStatement = preparedQuery((db) => {
  const versions = db.$with('versions', groupColumns).as(sql`
    select r.i, ${ownerHead(owner)} as head, ${ownerGeneration(owner)} as generation
    from json_to_recordset(${sql.placeholder('owners')}::json) as r(i int, owner text)`)
  return db.with(versions).select().from(versions).orderBy(sql`${versions.i}`).prepare('plants_versions')
})

// One row per page, in the order asked: one range scan of `count` + 1 rows gives the page and
// where the next one starts, and on the owner's last page (no next) the head too, its last
// position; the head's own probe runs only for a page that is not the last (`coalesce` evaluates
// its arguments in turn).
const pagesStatement = preparedQuery((db) => {
  const pages = db
    .$with('pages', {
      ...groupColumns,
      body: sql<string>`body`.as('body'),
      next: sql<string | null>`next`.as('next'),
    })
    .as(sql`
      select r.i,
             coalesce(case when found.positions[r.count + 1] is null
                           then found.positions[cardinality(found.positions)]::text end,
                      ${ownerHead(owner)}) as head,
             ${ownerGeneration(owner)} as generation, ${pageJson(sql`r.count`)} as body, found.positions[r.count + 1]::text as next
      from json_to_recordset(${sql.placeholder('reads')}::json) as r(i int, owner text, after bigint, count int)
      cross join lateral (${plantArrays(owner, sql`r.after`, sql`r.count + 1`)}) as found`)
  return db.with(pages).select().from(pages).orderBy(sql`${pages.i}`).prepare('plants_pages')
})
