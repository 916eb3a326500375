import { and, asc, eq, gte, lt, sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from '../store/database.ts'
import { plants } from '../store/schema.ts'
import type { PlantView } from './schemas.ts'

export type ListRequest = { owner: string; limit?: number; from?: bigint }

// A short page is read at once; a long listing yields batches as they are pulled. `next` is
// where the following page starts, if any.
export type PlantListing =
  | { kind: 'page'; plants: PlantView[]; next?: bigint }
  | { kind: 'stream'; batches: AsyncIterable<PlantView[]>; next?: bigint }

const BATCH_SIZE = 1000

// Work grows with the page, not with the store: every query is a range scan of the
// (owner, position) index. Long listings are read in batches so memory stays flat.
export async function listPlants(
  db: Executor,
  { owner, limit, from = 0n }: ListRequest,
): Promise<PlantListing> {
  if (limit !== undefined && limit <= BATCH_SIZE) {
    const found = await readBatch(db, owner, from, undefined, limit + 1)
    const after = found.length > limit ? found[limit]?.position : undefined
    const next = after === undefined ? undefined : BigInt(after)
    return { kind: 'page', plants: found.slice(0, limit).map(toPlantView), next }
  }
  const next = limit === undefined ? undefined : await positionAfter(db, owner, from, limit)
  // The first batch is read before answering, so an unreachable database is still a clean 503.
  const first = await readBatch(db, owner, from, next, BATCH_SIZE)
  return { kind: 'stream', batches: batchesFrom(db, owner, first, next), next }
}

async function* batchesFrom(db: Executor, owner: string, first: Row[], until: bigint | undefined) {
  for (let found = first; found.length > 0; ) {
    yield found.map(toPlantView)
    const last = found.at(-1)
    if (found.length < BATCH_SIZE || !last) return
    found = await readBatch(db, owner, BigInt(last.position) + 1n, until, BATCH_SIZE)
  }
}

type Row = { name: string; tag: string | null; position: string }

// Prepared, and built once per executor: a page is one round trip, with no query building.
// Positions travel as decimal text, exact whatever the driver does.
const batchStatement = (bounded: boolean) =>
  preparedQuery((db) =>
    db
      .select({ name: plants.name, tag: plants.tag, position: sql<string>`${plants.position}::text` })
      .from(plants)
      .where(
        and(
          eq(plants.owner, sql.placeholder('owner')),
          gte(plants.position, sql.placeholder('from')),
          bounded ? lt(plants.position, sql.placeholder('until')) : undefined,
        ),
      )
      .orderBy(asc(plants.position))
      .limit(sql.placeholder('count'))
      .prepare(bounded ? 'plants_range' : 'plants_page'),
  )
const readPage = batchStatement(false)
const readRange = batchStatement(true)

function readBatch(db: Executor, owner: string, from: bigint, until: bigint | undefined, count: number) {
  return until === undefined
    ? readPage(db).execute({ owner, from: from.toString(), count })
    : readRange(db).execute({ owner, from: from.toString(), until: until.toString(), count })
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
