import { Buffer } from 'node:buffer'
import { and, count, gt, max, type SQL, sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import { type Executor, rowsOf } from '../database/database.ts'
import { type Horizon, settledReader } from './horizon.ts'
import { pseudonymOf, readersKeyOf } from './pseudonyms.ts'
import { events } from './schema.ts'
import { openedData, openedMetadata, type StoredParts, UnfitEvent } from './sealed-parts.ts'

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

// The wrapped key of each event's owner, by the readers' rule (event-log/pseudonyms.ts): a
// PlantCreated is read only while its owner can be (`readable`); an OwnerErased names its owner
// while the erasure runs. The key is a lateral probe of its primary key per event read: a join the
// planner may hash would read every owner's key on every read of a few events.
export const withKeys = sql`left join lateral (${readersKeyOf(sql`${events}`)}) as k on true`
const readable = sql`${events.type} <> 'PlantCreated' or k.pseudonym is not null`

// The recorded time to the microsecond, in UTC.
const recordedAtText = sql<string>`to_char(${events.recordedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

// A read takes a whole batch as one JSON text, each event an array, parsed at once: decoding rows
// one by one in the driver, and columns one by one in the ORM, cost more than the parse. Each
// event comes as stored, sealed, with its owner's wrapped key; it is opened here.
const loggedEventRow = sql`json_build_array(
    ${events.transactionId}::text, ${events.position}::text, ${events.type}, ${events.schemaVersion},
    k.owner, ${recordedAtText}, ${events.data}, ${pseudonymOf(sql`${events}`)}, ${events.metadata},
    encode(k.key, 'base64'), ${events.streamId}, ${events.streamVersion})`

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
  string,
  number,
]

// An event of the log opened with its owner's key. An OwnerErased whose erasure has completed has
// no key: it names no one.
function toLoggedEvent(
  keyring: Keyring,
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
    streamId,
    streamVersion,
  ]: LoggedEventArray,
): LoggedEvent {
  const stored = { position: BigInt(position), streamId, streamVersion, type, schemaVersion, data }
  const opened = openEvent(keyring, stored, pseudonym, wrapped)
  const traceparent =
    opened.key === undefined ? undefined : openedMetadata(stored, metadata, opened.key).traceparent
  return {
    transactionId: BigInt(transactionId),
    position: stored.position,
    type,
    schemaVersion,
    metadata: traceparent === undefined ? { owner, pseudonym } : { owner, pseudonym, traceparent },
    recordedAt: new Date(recordedAt),
    // Written as a Date would write it when it has no more than milliseconds.
    time: recordedAt.replace(/(\.\d{3})000Z$/, '$1Z'),
    data: opened.data,
  }
}

// An event's key and data as every reader of the log opens them. An erasure's notice: the owner's
// key is gone, or going; none is kept in this process either. Only a plant's event is opened: an
// erasure's notice holds nothing sealed; a plant whose owner has no key left opens to `{}`.
function openEvent(
  keyring: Keyring,
  stored: StoredParts,
  pseudonym: string,
  wrapped: string | null,
): { key: Uint8Array | undefined; data: unknown } {
  if (stored.type === 'OwnerErased') keyring.forget(pseudonym)
  const key =
    wrapped === null || stored.type !== 'PlantCreated'
      ? undefined
      : keyring.open({ pseudonym, wrapped: Buffer.from(wrapped, 'base64') })
  return {
    key,
    data: stored.type === 'PlantCreated' && key === undefined ? {} : openedData(stored, key),
  }
}

const readLoggedEvents = settledReader<LoggedEventArray>('read_settled_events', {
  row: loggedEventRow,
  joins: withKeys,
  keep: readable,
})

// The settled log (event-log/horizon.ts) after `after`, in position order, as the feed and the change
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
  return { events: read.rows.map((row) => toLoggedEvent(keyring, row)), settled: read.settled }
}

// The settled log as exact text for export: jsonb as PostgreSQL prints it (numbers keep every
// digit), the timestamp to the microsecond in UTC. One JSON text per event, in position order.
export const readSettledText = settledReader<ExportedText>('read_settled_text', {
  row: sql`json_build_array(${events.position}::text, ${events.streamId}, ${events.streamVersion},
    ${events.type}, ${events.schemaVersion}, ${events.data}::text, ${events.metadata}::text, ${recordedAtText})`,
})

// position, stream id, stream version, type, schema version, data and metadata as JSON text, time.
export type ExportedText = [string, string, number, string, number, string, string, string]

// An event as a fold of the projection takes it: its data opened, its owner named while readable.
export type FoldedEvent = { position: bigint; type: string; owner: string | null; data: unknown }

// A fold's event: less than a reader's (no metadata, no recorded time), and the batch as one JSON
// text, parsed at once, as the settled readers take theirs (event-log/horizon.ts).
export const foldRow = sql`json_build_array(
    ${events.transactionId}::text, ${events.position}::text, ${events.type}, ${events.schemaVersion},
    k.owner, ${events.data}, ${pseudonymOf(sql`${events}`)}, encode(k.key, 'base64'), ${readable},
    ${events.streamId}, ${events.streamVersion})`

export type FoldRowArray = [
  string,
  string,
  string,
  number,
  string | null,
  unknown,
  string,
  string | null,
  boolean,
  string,
  number,
]

// The next `batchSize` events of the log after `after`, in log order, opened: what a rebuild
// folds. `settled` keeps to events whose transaction is older than every transaction still
// running: nothing can commit before them any more, so the cursor never moves past a late commit.
// Only a reader that holds the append lock exclusively (see locks/append-lock.ts) may drop
// it. A PlantCreated whose owner cannot be read is counted in `read`, not returned; so is an event
// that does not open or fit (event-log/sealed-parts.ts), which is handed to `onUnfit` and makes no row.
export async function readLogBatch(
  db: Executor,
  keyring: Keyring,
  after: LogCursor,
  batchSize: number,
  { settled = true, onUnfit }: { settled?: boolean; onUnfit?: (unfit: UnfitEvent) => void } = {},
): Promise<{ events: FoldedEvent[]; read: number; highest: bigint; cursor: LogCursor }> {
  const [found] = rowsOf<{ rows: string }>(
    await db.execute(sql`
      select coalesce(json_agg(batch.row order by batch.transaction_id, batch.position), '[]')::text as rows
      from (select ${foldRow} as row, ${events.transactionId} as transaction_id, ${events.position} as position
            from ${events} ${withKeys}
            where ${afterCursor(after)} ${settled ? sql`and ${isSettled}` : sql``}
            order by ${events.transactionId}, ${events.position}
            limit ${batchSize}) as batch`),
  )
  const rows = JSON.parse(found?.rows ?? '[]') as FoldRowArray[]
  const last = rows.at(-1)
  let highest = 0n
  const opened: FoldedEvent[] = []
  for (const row of rows) {
    const position = BigInt(row[1])
    if (position > highest) highest = position
    const event = openFoldRow(keyring, position, row, onUnfit)
    if (event) opened.push(event)
  }
  return {
    events: opened,
    read: rows.length,
    highest,
    cursor: last ? { transactionId: BigInt(last[0]), position: BigInt(last[1]) } : after,
  }
}

// A fold's row (`foldRow`, at `position`) opened: nothing when it cannot be read (a PlantCreated
// whose owner cannot be), or when it does not open or fit and `onUnfit` takes it.
export function openFoldRow(
  keyring: Keyring,
  position: bigint,
  [, , type, schemaVersion, owner, data, pseudonym, wrapped, readable, streamId, streamVersion]: FoldRowArray,
  onUnfit?: (unfit: UnfitEvent) => void,
): FoldedEvent | undefined {
  if (!readable) return undefined
  const stored = { position, streamId, streamVersion, type, schemaVersion, data }
  try {
    return { position, type, owner, data: openEvent(keyring, stored, pseudonym, wrapped).data }
  } catch (error) {
    if (!(error instanceof UnfitEvent) || !onUnfit) throw error
    onUnfit(error)
    return undefined
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
