import { asc, eq, type SQL, sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from './database.ts'
import { parseEventData } from './event-data.ts'
import { events, type PlantsTable, plants } from './schema.ts'

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

// One event for one stream, appended only if the stream is at `expectedVersion`.
export type StreamAppend = {
  streamId: string
  expectedVersion: number
  event: NewEvent
  metadata: EventMetadata
}

// The projection: the `plants` row each event makes, as SQL over rows shaped like the events
// table, so that PostgreSQL applies it where the events are. What each stored shape of an event
// means is defined once, by the database function plant_store_event (migration 0004). Appends run
// it on the rows they have just stored, a rebuild on batches of the log and a verification on the
// whole log (replay/): the events never travel to this process and back.
export function projectInto(table: PlantsTable = plants) {
  return (rows: SQL): SQL => sql`
    insert into ${table} (owner, id, name, tag, position)
    select e.metadata->>'owner', plant.id, plant.name, plant.tag, e.position
    from ${rows} as e, plant_store_event(e.type, e.schema_version, e.data, e.position) as plant`
}

// Whether the event at `event` (a row of the events table) has its row in `plants`.
export function isProjected(event: SQL): SQL {
  return sql`exists (select 1 from ${plants} as p
                     where p.owner = ${event}.metadata->>'owner' and p.position = ${event}.position)`
}

// A batch of appends, to as many streams, in one prepared statement that also projects them, so one
// transaction (a GET after a 200 sees the plant), one round trip and one commit, its text built
// once. Each owner's appends are serialised by an advisory lock on the owner, so one owner's
// positions commit in order and paging never skips a late commit; a batch takes its owners' locks
// before any of its events gets a position, in sorted order, so batches never deadlock. An append
// whose stream version is taken, by an earlier commit or a concurrent writer, is skipped on the
// (stream_id, stream_version) unique key without failing the others.
const appendedColumns = {
  position: sql<string>`position`.as('position'),
  streamId: sql<string>`stream_id`.as('stream_id'),
  streamVersion: sql<number>`stream_version`.as('stream_version'),
}

const appendStatement = preparedQuery((db) => {
  const input = db
    .$with('input', {})
    .as(
      sql`select value, n from jsonb_array_elements(${sql.placeholder('appends')}::jsonb) with ordinality as e(value, n)`,
    )
  const locked = db.$with('locked', {}).as(
    sql`select count(pg_advisory_xact_lock(key)) from (
          select distinct hashtextextended(input.value->'metadata'->>'owner', 0) as key from input order by 1) as keys`,
  )
  // The events' rows come out of the locks' row, so the locks are held before a position is taken.
  const appended = db.$with('appended', appendedColumns).as(sql`
    insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select input.value->>'streamId', (input.value->>'version')::int, input.value->>'type',
           (input.value->>'schemaVersion')::int, input.value->'data', input.value->'metadata',
           (input.value->>'recordedAt')::timestamptz
    from locked, input
    order by input.n
    on conflict (stream_id, stream_version) do nothing
    returning position, stream_id, stream_version, type, schema_version, data, metadata`)
  const projected = db.$with('projected', {}).as(projectInto()(sql`appended`))
  return db
    .with(input, locked, appended, projected)
    .select({
      position: sql<string>`${appended.position}::text`,
      streamId: appended.streamId,
      streamVersion: appended.streamVersion,
    })
    .from(appended)
    .prepare('append_events')
})

// A lone append, the usual case when creates are few, without the batch's JSON array: its values
// as parameters, the same lock, insert and projection.
const appendOneStatement = preparedQuery((db) => {
  const value = (name: string, type: string) => sql`${sql.placeholder(name)}::${sql.raw(type)}`
  const locked = db
    .$with('locked', {})
    .as(sql`select pg_advisory_xact_lock(hashtextextended(${value('owner', 'text')}, 0))`)
  const appended = db.$with('appended', appendedColumns).as(sql`
    insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select ${value('streamId', 'text')}, ${value('version', 'int')}, ${value('type', 'text')},
           ${value('schemaVersion', 'int')}, ${value('data', 'jsonb')}, ${value('metadata', 'jsonb')},
           ${value('recordedAt', 'timestamptz')}
    from locked
    on conflict (stream_id, stream_version) do nothing
    returning position, stream_id, stream_version, type, schema_version, data, metadata`)
  const projected = db.$with('projected', {}).as(projectInto()(sql`appended`))
  return db
    .with(locked, appended, projected)
    .select({ position: sql<string>`${appended.position}::text` })
    .from(appended)
    .prepare('append_event')
})

async function appendOne(db: Executor, { streamId, expectedVersion, event, metadata }: StreamAppend) {
  const [row] = await appendOneStatement(db).execute({
    owner: metadata.owner,
    streamId,
    version: expectedVersion + 1,
    type: event.type,
    schemaVersion: event.schemaVersion,
    data: JSON.stringify(event.data),
    metadata: JSON.stringify(metadata),
    recordedAt: event.recordedAt.toISOString(),
  })
  return [row === undefined ? undefined : BigInt(row.position)]
}

// The position of each append's event, in the order given; undefined where the stream was no longer
// at the expected version, and nothing was appended for it.
export async function appendEvents(db: Executor, appends: StreamAppend[]): Promise<(bigint | undefined)[]> {
  const [lone] = appends
  if (lone === undefined) return []
  if (appends.length === 1) return appendOne(db, lone)
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
  const rows = await appendStatement(db).execute({ appends: encoded })
  const positions = new Map(rows.map((row) => [appendKey(row.streamId, row.streamVersion), row.position]))
  return appends.map(({ streamId, expectedVersion }) => {
    const position = positions.get(appendKey(streamId, expectedVersion + 1))
    return position === undefined ? undefined : BigInt(position)
  })
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
