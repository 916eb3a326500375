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
  // Advisory locks (SQL calls) taken in this order before the new events get their positions,
  // given the metadata (jsonb) of the events being appended.
  locks?: (metadata: SQL) => SQL[]
  // More of the same statement: a statement (a common table expression) that runs with the append,
  // in its transaction, given `appended`, the new events' rows as stored (shaped like the events
  // table).
  with?: (appended: SQL) => SQL
}

export type Append = (
  db: Executor,
  streamId: string,
  expectedVersion: number,
  newEvents: NewEvent[],
  metadata: EventMetadata,
) => Promise<RecordedEvent[]>

// An append after `expectedVersion` in one prepared statement, which commits on its own unless
// `db` is a transaction: one round trip, its text built once. A concurrent writer that got there
// first makes the insert fail on the (stream_id, stream_version) unique key: at most one wins.
export function appendStatement(
  name: string,
  { locks = () => [], with: alongside }: AppendOptions = {},
): Append {
  const metadataParameter = sql`${sql.placeholder('metadata')}::jsonb`
  const held = locks(metadataParameter)
  const statement = preparedQuery((db) => {
    // The events' rows come out of the locks' row, so the locks are held before a position is taken.
    const locked = db
      .$with('locked', {})
      .as(sql`select ${held.length > 0 ? sql.join(held, sql`, `) : sql`1`}`)
    const returned = {
      position: sql<string>`position`.as('position'),
      streamVersion: sql<number>`stream_version`.as('stream_version'),
    }
    const appended = db.$with('appended', returned).as(sql`
      insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      select ${sql.placeholder('streamId')}::text, ${sql.placeholder('expectedVersion')}::int + event.n::int,
             event.value->>'type', (event.value->>'schemaVersion')::int, event.value->'data',
             ${metadataParameter}, (event.value->>'recordedAt')::timestamptz
      from locked, jsonb_array_elements(${sql.placeholder('events')}::jsonb) with ordinality as event(value, n)
      order by event.n
      returning position, stream_version, type, schema_version, data, metadata`)
    const parts = alongside
      ? [locked, appended, db.$with('alongside', {}).as(alongside(sql`appended`))]
      : [locked, appended]
    return db
      .with(...parts)
      .select({ position: sql<string>`${appended.position}::text`, streamVersion: appended.streamVersion })
      .from(appended)
      .orderBy(appended.streamVersion)
      .prepare(name)
  })
  return async (db, streamId, expectedVersion, newEvents, metadata) => {
    if (newEvents.length === 0) return []
    const encoded = JSON.stringify(
      newEvents.map((event) => ({
        type: event.type,
        schemaVersion: event.schemaVersion,
        data: event.data,
        recordedAt: event.recordedAt.toISOString(),
      })),
    )
    const rows = await statement(db).execute({
      streamId,
      expectedVersion,
      events: encoded,
      metadata: JSON.stringify(metadata),
    })
    return rows.map((row, index) => ({
      ...(newEvents[index] as NewEvent),
      position: BigInt(row.position),
      streamId,
      streamVersion: row.streamVersion,
      metadata,
    }))
  }
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
