import { Buffer } from 'node:buffer'
import { and, count, gt, max, type SQL, sql } from 'drizzle-orm'
import type { Keyring } from '../keys/keyring.ts'
import { type Executor, rowsOf } from '../store/database.ts'
import { type Horizon, settledReader } from './horizon.ts'
import { openedData, openedMetadata } from './opening.ts'
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

// The wrapped key of each event's owner, by the readers' rule (event-log/sealing.ts): a
// PlantCreated is read only while its owner can be (`readable`); an OwnerErased names its owner
// while the erasure runs. The key is a lateral probe of its primary key per event read: a join the
// planner may hash would read every owner's key on every read of a few events.
const withKeys = sql`left join lateral (${readersKeyOf(sql`${events}`)}) as k on true`
const readable = sql`${events.type} <> 'PlantCreated' or k.pseudonym is not null`

// The recorded time to the microsecond, in UTC.
const recordedAtText = sql<string>`to_char(${events.recordedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

// A read takes a whole batch as one JSON text, each event an array, parsed at once: decoding rows
// one by one in the driver, and columns one by one in the ORM, cost more than the parse. Each
// event comes as stored, sealed, with its owner's wrapped key; it is opened here.
const loggedEventRow = sql`json_build_array(
    ${events.transactionId}::text, ${events.position}::text, ${events.type}, ${events.schemaVersion},
    k.owner, ${recordedAtText}, ${events.data}, ${pseudonymOf(sql`${events}`)}, ${events.metadata},
    encode(k.key, 'base64'))`

type LoggedEventArray = [
  string,
  string,
  string,
  number,
  string | null,
  string,
  unknown,
  string,
  unknown,
  string | null,
]

// An event of the log opened with its owner's key. An OwnerErased whose erasure has completed has
// no key: it names no one.
function toLoggedEvent(
  keyring: Keyring,
  withTraceparent: boolean,
  [
    transactionId,
    position,
    type,
    schemaVersion,
    owner,
    recordedAt,
    data,
    pseudonym,
    metadata,
    wrapped,
  ]: LoggedEventArray,
): LoggedEvent {
  const stored = { position: BigInt(position), type, schemaVersion, data }
  // An erasure's notice: the owner's key is gone, or going; none is kept in this process either.
  if (type === 'OwnerErased') keyring.forget(pseudonym)
  // Only a plant's event is opened: an erasure's notice holds nothing sealed, and its key is going.
  const key =
    wrapped === null || type !== 'PlantCreated'
      ? undefined
      : keyring.open({ pseudonym, wrapped: Buffer.from(wrapped, 'base64') })
  const traceparent =
    key === undefined || !withTraceparent ? undefined : openedMetadata(metadata, key).traceparent
  return {
    transactionId: BigInt(transactionId),
    position: stored.position,
    type,
    schemaVersion,
    metadata: traceparent === undefined ? { owner, pseudonym } : { owner, pseudonym, traceparent },
    recordedAt: new Date(recordedAt),
    // Written as a Date would write it when it has no more than milliseconds.
    time: recordedAt.replace(/(\.\d{3})000Z$/, '$1Z'),
    data: type === 'PlantCreated' && key === undefined ? {} : openedData(stored, key),
  }
}

const readLoggedEvents = settledReader<LoggedEventArray>('read_settled_events', {
  row: loggedEventRow,
  joins: withKeys,
  keep: readable,
})

// The settled log (log/horizon.ts) after `after`, in position order, as the feed and the change
// streams take it, with the horizon it was read up to.
export async function readSettledEvents(
  db: Executor,
  keyring: Keyring,
  after: bigint,
  settled: bigint,
  horizons: Horizon[],
  batchSize: number,
): Promise<{ events: LoggedEvent[]; settled: bigint }> {
  const read = await readLoggedEvents(db, after, settled, horizons, batchSize)
  return { events: read.rows.map((row) => toLoggedEvent(keyring, true, row)), settled: read.settled }
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

// The next `batchSize` events of the log after `after`, in log order, opened: what a rebuild
// folds. `settled` keeps to events whose transaction is older than every transaction still
// running: nothing can commit before them any more, so the cursor never moves past a late commit.
// Only a reader that holds the append lock exclusively (see event-log/append-lock.ts) may drop
// it. A PlantCreated whose owner cannot be read is counted in `read`, not returned. `traceparent`:
// whether each event's metadata is opened for it too (a fold of the projection needs only data).
export async function readLogBatch(
  db: Executor,
  keyring: Keyring,
  after: LogCursor,
  batchSize: number,
  { settled = true, traceparent = true } = {},
): Promise<{ events: LoggedEvent[]; read: number; highest: bigint; cursor: LogCursor }> {
  const rows = rowsOf<{ row: LoggedEventArray; readable: boolean }>(
    await db.execute(sql`
      select ${loggedEventRow} as row, (${readable}) as readable
      from ${events} ${withKeys}
      where ${afterCursor(after)} ${settled ? sql`and ${isSettled}` : sql``}
      order by ${events.transactionId}, ${events.position}
      limit ${batchSize}`),
  )
  const last = rows.at(-1)?.row
  let highest = 0n
  for (const { row } of rows) if (BigInt(row[1]) > highest) highest = BigInt(row[1])
  return {
    events: rows.filter((found) => found.readable).map(({ row }) => toLoggedEvent(keyring, traceparent, row)),
    read: rows.length,
    highest,
    cursor: last ? { transactionId: BigInt(last[0]), position: BigInt(last[1]) } : after,
  }
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

function afterCursor(after: LogCursor): SQL {
  return sql`(${events.transactionId}, ${events.position}) > (${after.transactionId.toString()}::xid8, ${after.position.toString()}::bigint)`
}

const isSettled = sql`${events.transactionId} < pg_snapshot_xmin(pg_current_snapshot())`

// Events after `after` in log order, settled or not: how far a reader of the log is behind.
export async function countLogAfter(db: Executor, after: LogCursor): Promise<number> {
  return db.$count(events, afterCursor(after))
}
