import { and, asc, count, gt, max, type SQL, sql } from 'drizzle-orm'
import type { PgSelect } from 'drizzle-orm/pg-core'
import { type Executor, rowsOf, type Transaction } from '../store/database.ts'
import { currentData, currentShape } from './append.ts'
import { parseEventData } from './event-data.ts'
import { type Horizon, settledReader } from './horizon.ts'
import { events } from './schema.ts'
import { pseudonymOf, readersKeyOf } from './sealing.ts'

// Where a reader of the global log stands: the last event it has read. The log is read in
// (transaction id, position) order, not by position alone: a position is taken at insert but
// becomes visible at commit, so a lower position can appear after a higher one has been read.
export type LogCursor = { transactionId: bigint; position: bigint }

export const LOG_START: LogCursor = { transactionId: 0n, position: 0n }

// An event of the log as its readers (the feed, the change streams) take it: opened with its
// owner's key, its data in today's shape. `metadata.owner` is the token's subject; null only for an
// OwnerErased whose erasure has completed (the key, which named the owner, is gone). `time` is the
// recorded time as RFC 3339 text in UTC with every digit the database keeps (a Date keeps
// milliseconds; an imported event may carry microseconds). `traceparent`: the W3C trace context of
// the request that made it, when that request was traced; it was sealed with the event.
export type LoggedEvent = {
  transactionId: bigint
  position: bigint
  type: string
  schemaVersion: number
  data: unknown
  recordedAt: Date
  time: string
  metadata: { owner: string | null; pseudonym: string; traceparent?: string }
}

// The key of each event's owner, and the event opened with it. A PlantCreated is read only while
// its owner can be (`readable`); an OwnerErased names its owner while the erasure runs.
// The key is a lateral probe of its primary key per event read: a join the planner may hash would
// read every owner's key on every read of a few events.
const withKeys = sql`
  left join lateral (${readersKeyOf(sql`${events}`)}) as k on true
  left join lateral ${currentShape(sql`k.key`)} on true`
const readable = sql`${events.type} <> 'PlantCreated' or k.pseudonym is not null`

// The recorded time to the microsecond, in UTC.
const recordedAtText = sql<string>`to_char(${events.recordedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

// A replay reads a whole batch as one JSON text, each event an array, parsed at once: decoding
// rows one by one in the driver, and columns one by one in the ORM, cost more than the parse.
// The owner comes from their key; the data is in today's shape (see currentData).
const loggedEventRow = sql`json_build_array(
    ${events.transactionId}::text, ${events.position}::text, ${events.type}, ${events.schemaVersion},
    k.owner, ${recordedAtText}, ${currentData}, ${pseudonymOf(sql`${events}`)},
    plant_store_open(${events.metadata}, k.key)->>'traceparent')`

type LoggedEventArray = [
  string,
  string,
  string,
  number,
  string | null,
  string,
  unknown,
  string,
  string | null,
]

function toLoggedEvent([
  transactionId,
  position,
  type,
  schemaVersion,
  owner,
  recordedAt,
  data,
  pseudonym,
  traceparent,
]: LoggedEventArray): LoggedEvent {
  return {
    transactionId: BigInt(transactionId),
    position: BigInt(position),
    type,
    schemaVersion,
    metadata: traceparent === null ? { owner, pseudonym } : { owner, pseudonym, traceparent },
    recordedAt: new Date(recordedAt),
    // Written as a Date would write it when it has no more than milliseconds.
    time: recordedAt.replace(/(\.\d{3})000Z$/, '$1Z'),
    data,
  }
}

const readLoggedEvents = settledReader<LoggedEventArray>(
  'read_settled_events',
  { row: loggedEventRow, joins: withKeys, keep: readable },
  parseEventData,
)

// The settled log (log/horizon.ts) after `after`, in position order, as the feed and the change
// streams take it, with the horizon it was read up to.
export async function readSettledEvents(
  db: Executor,
  after: bigint,
  settled: bigint,
  horizons: Horizon[],
  batchSize: number,
): Promise<{ events: LoggedEvent[]; settled: bigint }> {
  const read = await readLoggedEvents(db, after, settled, horizons, batchSize)
  return { events: read.rows.map(toLoggedEvent), settled: read.settled }
}

const readExportedText = settledReader<ExportedText>('read_settled_text', {
  row: sql`json_build_array(${events.position}::text, ${events.streamId}, ${events.streamVersion},
    ${events.type}, ${events.schemaVersion}, ${events.data}::text, ${events.metadata}::text, ${recordedAtText})`,
})

// The settled log as exact text for export: jsonb as PostgreSQL prints it (numbers keep every
// digit), the timestamp to the microsecond in UTC. One JSON text per event, in position order.
export async function readSettledText(
  db: Executor,
  after: bigint,
  settled: bigint,
  horizons: Horizon[],
  batchSize: number,
): Promise<{ lines: ExportedText[]; settled: bigint }> {
  const read = await readExportedText(db, after, settled, horizons, batchSize)
  return { lines: read.rows, settled: read.settled }
}

// position, stream id, stream version, type, schema version, data and metadata as JSON text, time.
export type ExportedText = [string, string, number, string, number, string, string, string]

// Runs `project` (given `batch`: rows shaped like the events table) over the next events of the
// log after `after`, in log order, in one statement: the events never leave the database. Returns
// how many it read and where the reader now stands. `settled` keeps to events whose transaction
// is older than every transaction still running: nothing can commit before them any more, so the
// cursor never moves past a late commit. Only a reader that holds the append lock exclusively
// (see log/append-lock.ts) may drop it.
export async function projectLogBatch(
  db: Executor,
  after: LogCursor,
  batchSize: number,
  project: (batch: SQL) => SQL,
  { settled = true } = {},
): Promise<{ events: number; highest: bigint; cursor: LogCursor }> {
  const batch = nextEvents(db.select().from(events).$dynamic(), after, batchSize, settled)
  const result = await db.execute(sql`
    with batch as (${batch}),
    projected as (${project(sql`batch`)})
    select count(*)::int as events, max(position)::text as highest,
           (select array[transaction_id::text, position::text] from batch
            order by transaction_id desc, position desc limit 1) as last
    from batch`)
  const [row] = rowsOf<{ events: number; highest: string | null; last: [string, string] | null }>(result)
  const last = row?.last
  return {
    events: row?.events ?? 0,
    highest: BigInt(row?.highest ?? 0),
    cursor: last ? { transactionId: BigInt(last[0]), position: BigInt(last[1]) } : after,
  }
}

// The whole log as it stands in this transaction's snapshot, through `project` (given `log`).
export async function projectWholeLog(tx: Transaction, project: (log: SQL) => SQL): Promise<number> {
  await tx.execute(sql`with projected as (${project(sql`${events}`)}) select 1`)
  return (await logHead(tx)).events
}

export async function logHead(db: Executor): Promise<{ events: number; position: bigint }> {
  const [row] = await db.select({ events: count(), position: max(events.position) }).from(events)
  return { events: row?.events ?? 0, position: row?.position ?? 0n }
}

// Events after `position` for which `condition` (given `event`, a row of the events table) holds.
export async function countEventsAfter(
  db: Executor,
  position: bigint,
  condition?: (event: SQL) => SQL,
): Promise<number> {
  return db.$count(events, and(gt(events.position, position), condition?.(sql`${events}`)))
}

// The next `batchSize` events after `after`, in transaction order. `settled` as for projectLogBatch.
function nextEvents<Query extends PgSelect>(
  query: Query,
  after: LogCursor,
  batchSize: number,
  settled: boolean,
) {
  return query
    .where(and(afterCursor(after), settled ? isSettled : undefined))
    .orderBy(asc(events.transactionId), asc(events.position))
    .limit(batchSize)
}

function afterCursor(after: LogCursor): SQL {
  return sql`(${events.transactionId}, ${events.position}) > (${after.transactionId.toString()}::xid8, ${after.position.toString()}::bigint)`
}

const isSettled = sql`${events.transactionId} < pg_snapshot_xmin(pg_current_snapshot())`

// Events after `after` in log order, settled or not: how far a reader of the log is behind.
export async function countLogAfter(db: Executor, after: LogCursor): Promise<number> {
  return db.$count(events, afterCursor(after))
}
