import type { Executor } from '../database/database.ts'
import {
  type Batch,
  type CoveredRead,
  positionAfter,
  type Row,
  readBatch,
  readPage,
  readVersion,
} from './covering-statements.ts'
import type { ListingVersion } from './etag.ts'
import { type PlainReads, singleReads } from './page-statements.ts'
import type { PlantView } from './schemas.ts'

// What GET /plants reads of one owner. `unchanged`, for a conditional request: told the owner's
// version (head and generation, etag.ts) before any row is read, it says whether the caller's copy
// is current.
export type ListRequest = {
  owner: string
  limit?: number
  from?: bigint
  unchanged?: (version: ListingVersion) => boolean
}

// A short page is read at once, as the JSON text of its array; a long listing yields batches as
// they are pulled. `next` is where the following page starts, if any. `position` is the owner's
// head as the (first) read saw it: the position of their latest plant in the snapshot that produced
// the rows (docs/live-changes.md); `generation` is the owner's, from the same snapshot.
// `unchanged`: the request's `unchanged` said so, and no row was read.
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

// Work grows with the page, not with the store: every statement is a range scan of the
// (owner, position) index. Long listings are read in batches so memory stays flat. A page and a
// conditional request's version are read by `reads` (shared with the reads of other requests in
// flight, page-groups.ts, or each by a statement of its own).
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
// replica, docs/operating.md, Scaling out): each statement checks that in its own snapshot.
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
  if (limit !== undefined && limit <= BATCH_SIZE) {
    if (reads) return { kind: 'page', ...(await reads.page({ owner, from, count: limit })) }
    const { event, ...page } = await readPage(db, { owner, from, count: limit, covering })
    return event === 'seen' ? { kind: 'page', ...page } : { kind: 'uncovered', event }
  }
  const read: ReadBatch = (start, until, count) =>
    readBatch(db, { owner, from: start, until, count, covering })
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
  const until = next ?? first.position + 1n
  const { position, generation } = first
  return { kind: 'stream', batches: batchesFrom(read, first.rows, until), next, position, generation }
}

type ReadBatch = (from: bigint, until: bigint | undefined, count: CoveredRead['count']) => Promise<Batch>

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

function toPlantView(row: { name: string; tag: string | null }): PlantView {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag }
}
