import { and, asc, eq, gte, sql } from 'drizzle-orm'
import { type Executor, preparedStatement } from '../store/database.ts'
import { plants } from '../store/schema.ts'

export type ListRequest = { owner: string; limit?: number; from?: bigint }

// A short page is read at once; a long listing yields its parts as they are pulled. Plants travel
// as JSON text: a page is a JSON array of Plant, a part of a stream the elements of one, separated
// by commas. `next` is where the following page starts, if any.
export type PlantListing =
  | { kind: 'page'; json: string; next?: bigint }
  | { kind: 'stream'; parts: AsyncIterable<string>; next?: bigint }

const BATCH_SIZE = 1000

// Work grows with the page, not with the store: every query is a range scan of the
// (owner, position) index. Long listings are read in batches so memory stays flat.
export async function listPlants(
  db: Executor,
  { owner, limit, from = 0n }: ListRequest,
): Promise<PlantListing> {
  if (limit !== undefined && limit <= BATCH_SIZE) {
    const slice = await readSlice(db, owner, from, undefined, limit)
    return { kind: 'page', json: `[${slice.json}]`, next: slice.next }
  }
  const next = limit === undefined ? undefined : await positionAfter(db, owner, from, limit)
  // The first batch is read before answering, so an unreachable database is still a clean 503.
  const first = await readSlice(db, owner, from, next, BATCH_SIZE)
  return { kind: 'stream', parts: partsFrom(db, owner, first, next), next }
}

async function* partsFrom(db: Executor, owner: string, first: Slice, until: bigint | undefined) {
  for (let slice = first; ; ) {
    if (slice.json !== '') yield slice.json
    if (slice.next === undefined) return
    slice = await readSlice(db, owner, slice.next, until, BATCH_SIZE)
  }
}

type Slice = { json: string; next?: bigint }

// One row whatever the page's length: PostgreSQL writes the plants as the JSON the API returns
// (`to_json` escapes text as JSON.stringify does; a plant without a tag has no `tag`), so the
// driver decodes one value instead of three per plant, and nothing is mapped or serialised here.
// One row past the slice is read to tell where the next one starts. Prepared, and built once per
// executor: a page is one round trip. Positions travel as decimal text, exact whatever the driver.
const sliceStatement = (bounded: boolean) =>
  preparedStatement<{ plants: string; next: string | null }>(
    bounded ? 'plants_range' : 'plants_page',
    sql`select coalesce(string_agg(plant, ',' order by position) filter (where n <= ${sql.placeholder('take')}::int), '') as plants,
               (max(position) filter (where n > ${sql.placeholder('take')}::int))::text as next
        from (
          select row_number() over (order by ${plants.position}) as n, ${plants.position} as position,
                 '{"name":' || to_json(${plants.name})::text || coalesce(',"tag":' || to_json(${plants.tag})::text, '') || '}' as plant
          from ${plants}
          where ${plants.owner} = ${sql.placeholder('owner')} and ${plants.position} >= ${sql.placeholder('from')}
            ${bounded ? sql`and ${plants.position} < ${sql.placeholder('until')}` : sql``}
          order by ${plants.position}
          limit ${sql.placeholder('take')}::int + 1
        ) as slice`,
  )
const readPage = sliceStatement(false)
const readRange = sliceStatement(true)

async function readSlice(
  db: Executor,
  owner: string,
  from: bigint,
  until: bigint | undefined,
  take: number,
): Promise<Slice> {
  const [row] =
    until === undefined
      ? await readPage(db, { owner, from: from.toString(), take })
      : await readRange(db, { owner, from: from.toString(), until: until.toString(), take })
  return { json: row?.plants ?? '', next: row?.next == null ? undefined : BigInt(row.next) }
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
