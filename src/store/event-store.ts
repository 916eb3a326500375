import { asc, eq, type SQL, sql } from 'drizzle-orm'
import { type Executor, preparedQuery, preparedStatement } from './database.ts'
import { parseEventData } from './event-data.ts'
import { events } from './schema.ts'

export type EventMetadata = (typeof events.$inferSelect)['metadata']

export type NewEvent = { type: string; schemaVersion: number; data: unknown; recordedAt: Date }

export type RecordedEvent = NewEvent & {
  position: bigint
  streamId: string
  streamVersion: number
  metadata: EventMetadata
}

// What folding an event into a projection needs; a replay reads only this much of each event.
export type FoldableEvent = Pick<
  RecordedEvent,
  'position' | 'type' | 'schemaVersion' | 'data' | 'recordedAt'
> & {
  metadata: Pick<EventMetadata, 'owner'>
}

const streamQuery = preparedQuery((db) =>
  db
    .select(recordedColumns)
    .from(events)
    .where(eq(events.streamId, sql.placeholder('streamId')))
    .orderBy(asc(events.streamVersion))
    .prepare('read_stream'),
)

export async function readStream(db: Executor, streamId: string): Promise<RecordedEvent[]> {
  return streamQuery(db).execute({ streamId })
}

export type AppendOptions = {
  // An advisory lock key (a bigint SQL expression) given the metadata (jsonb) of an event being
  // appended. The keys of a batch are locked before any of its events gets a position, in sorted
  // order, so that batches that share keys wait on each other and never deadlock.
  lockKey?: (metadata: SQL) => SQL
  // More of the same statement: common table expressions that run with the append, in its
  // transaction, given `appended`, the new events' rows as stored (shaped like the events table).
  with?: (appended: SQL) => SQL
}

// One event for one stream, appended only if the stream is at `expectedVersion`.
export type StreamAppend = {
  streamId: string
  expectedVersion: number
  event: NewEvent
  metadata: EventMetadata
}

// The position of each append's event, in the order given; undefined where the stream was no longer
// at the expected version, and nothing was appended for it.
export type AppendBatch = (db: Executor, appends: StreamAppend[]) => Promise<(bigint | undefined)[]>

// A batch of appends, to as many streams, in one prepared statement that commits on its own unless
// `db` is a transaction: one round trip, one commit, its text built once. An append whose stream
// version is taken, by an earlier commit or a concurrent writer, is skipped on the (stream_id,
// stream_version) unique key without failing the others. Positions follow the order given.
export function appendBatchStatement(
  name: string,
  { lockKey, with: alongside }: AppendOptions = {},
): AppendBatch {
  const locked = lockKey
    ? sql`select count(pg_advisory_xact_lock(key)) from (
            select distinct ${lockKey(sql`input.value->'metadata'`)} as key from input order by 1) as keys`
    : sql`select 1`
  // The events' rows come out of the locks' row, so the locks are held before a position is taken.
  const execute = preparedStatement<{ position: string; stream_id: string; stream_version: number }>(
    name,
    sql`
      with input as (
        select value, n from jsonb_array_elements(${sql.placeholder('appends')}::jsonb) with ordinality as e(value, n)
      ),
      locked as (${locked}),
      appended as (
        insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
        select input.value->>'streamId', (input.value->>'version')::int, input.value->>'type',
               (input.value->>'schemaVersion')::int, input.value->'data', input.value->'metadata',
               (input.value->>'recordedAt')::timestamptz
        from locked, input
        order by input.n
        on conflict (stream_id, stream_version) do nothing
        returning position, stream_id, stream_version, type, schema_version, data, metadata
      )${alongside ? sql`, ${alongside(sql`appended`)}` : sql``}
      select position::text as position, stream_id, stream_version from appended`,
  )
  return async (db, appends) => {
    if (appends.length === 0) return []
    const encoded = JSON.stringify(
      appends.map(({ streamId, expectedVersion, event, metadata }) => ({
        streamId,
        version: expectedVersion + 1,
        type: event.type,
        schemaVersion: event.schemaVersion,
        data: event.data,
        metadata,
        recordedAt: event.recordedAt.toISOString(),
      })),
    )
    const rows = await execute(db, { appends: encoded })
    const positions = new Map(rows.map((row) => [appendKey(row.stream_id, row.stream_version), row.position]))
    return appends.map(({ streamId, expectedVersion }) => {
      const position = positions.get(appendKey(streamId, expectedVersion + 1))
      return position === undefined ? undefined : BigInt(position)
    })
  }
}

function appendKey(streamId: string, version: number): string {
  return `${version}:${streamId}`
}

export const recordedColumns = {
  position: events.position,
  streamId: events.streamId,
  streamVersion: events.streamVersion,
  type: events.type,
  schemaVersion: events.schemaVersion,
  data: sql<unknown>`${events.data}::text`.mapWith(parseEventData),
  metadata: events.metadata,
  recordedAt: events.recordedAt,
}
