import { asc, eq, type SQL, sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from './database.ts'
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

// What decoding an event needs; the feed reads only this much of each event.
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
    .crossJoinLateral(currentShape)
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
  // More of the same statement: a statement (a common table expression) that runs with the append,
  // in its transaction, given `appended`, the new events' rows as stored (shaped like the events
  // table).
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
  const statement = preparedQuery((db) => {
    const input = db
      .$with('input', {})
      .as(
        sql`select value, n from jsonb_array_elements(${sql.placeholder('appends')}::jsonb) with ordinality as e(value, n)`,
      )
    const locked = db.$with('locked', {}).as(
      lockKey
        ? sql`select count(pg_advisory_xact_lock(key)) from (
                  select distinct ${lockKey(sql`input.value->'metadata'`)} as key from input order by 1) as keys`
        : sql`select 1`,
    )
    const returned = {
      position: sql<string>`position`.as('position'),
      streamId: sql<string>`stream_id`.as('stream_id'),
      streamVersion: sql<number>`stream_version`.as('stream_version'),
    }
    // The events' rows come out of the locks' row, so the locks are held before a position is taken.
    const appended = db.$with('appended', returned).as(sql`
      insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      select input.value->>'streamId', (input.value->>'version')::int, input.value->>'type',
             (input.value->>'schemaVersion')::int, input.value->'data', input.value->'metadata',
             (input.value->>'recordedAt')::timestamptz
      from locked, input
      order by input.n
      on conflict (stream_id, stream_version) do nothing
      returning position, stream_id, stream_version, type, schema_version, data, metadata`)
    const parts = alongside
      ? [input, locked, appended, db.$with('alongside', {}).as(alongside(sql`appended`))]
      : [input, locked, appended]
    return db
      .with(...parts)
      .select({
        position: sql<string>`${appended.position}::text`,
        streamId: appended.streamId,
        streamVersion: appended.streamVersion,
      })
      .from(appended)
      .prepare(name)
  })
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
    const rows = await statement(db).execute({ appends: encoded })
    const positions = new Map(rows.map((row) => [appendKey(row.streamId, row.streamVersion), row.position]))
    return appends.map(({ streamId, expectedVersion }) => {
      const position = positions.get(appendKey(streamId, expectedVersion + 1))
      return position === undefined ? undefined : BigInt(position)
    })
  }
}

function appendKey(streamId: string, version: number): string {
  return `${version}:${streamId}`
}

// Each event of a read of the events table as the code reads it today, whatever shape it was
// stored in: the database upcasts it (migration 0004), by the definition the projection applies.
// Joined laterally, it makes `currentData` the event's data in today's shape.
export const currentShape = sql`plant_store_event(${events.type}, ${events.schemaVersion}, ${events.data}, ${events.position}) as current`
export const currentData = sql`current.current_data`

// A read event's data is in today's shape (currentData); its schemaVersion is the stored one.
export const recordedColumns = {
  position: events.position,
  streamId: events.streamId,
  streamVersion: events.streamVersion,
  type: events.type,
  schemaVersion: events.schemaVersion,
  data: sql<unknown>`${currentData}::text`.mapWith(parseEventData),
  metadata: events.metadata,
  recordedAt: events.recordedAt,
}
