import { type SQL, sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from '../store/database.ts'
import { parseEventData } from './event-data.ts'
import { events, ownerKeys, type PlantsTable, plants } from './schema.ts'
import { liveKeys, newWrappedKey, openedData, pseudonymOf, unwrappedKey } from './sealing.ts'

export type NewEvent = { type: string; schemaVersion: number; data: unknown; recordedAt: Date }

// An event of one plant's stream, opened: its data in today's shape.
export type RecordedEvent = NewEvent & { position: bigint; streamVersion: number }

// What decoding an event needs; the feed reads only this much of each event. `owner` is the
// token's subject, read from the owner's key (docs/erasure.md).
export type FoldableEvent = Pick<
  RecordedEvent,
  'position' | 'type' | 'schemaVersion' | 'data' | 'recordedAt'
> & {
  metadata: { owner: string }
}

// Each event of a read as the code reads it today, whatever shape it was stored in: the database
// opens it with its owner's key `key` and upcasts it (migration 0004), by the definition the
// projection applies. Joined laterally, it makes `currentData` the event's data in today's shape.
export function currentShape(key: SQL): SQL {
  return sql`plant_store_event(${events.type}, ${events.schemaVersion}, ${openedData(sql`${events}`, key)}, ${events.position}) as current`
}
export const currentData = sql`current.current_data`

// One plant's stream, found by its owner's key (its id is an HMAC under it), opened. Empty when
// the owner has no key that can be read.
const plantStreamQuery = preparedQuery((db) => {
  const stream = db
    .$with('stream', {
      position: sql<string>`position`.as('position'),
      streamVersion: sql<number>`stream_version`.as('stream_version'),
      type: sql<string>`type`.as('type'),
      schemaVersion: sql<number>`schema_version`.as('schema_version'),
      data: sql<string>`data`.as('data'),
      recordedAt: sql<string>`recorded_at`.as('recorded_at'),
    })
    .as(sql`
      select ${events.position}::text as position, ${events.streamVersion} as stream_version,
             ${events.type} as type, ${events.schemaVersion} as schema_version,
             ${currentData}::text as data, ${events.recordedAt}::text as recorded_at
      from ${liveKeys} as k
      join ${events} on ${events.streamId} = plant_store_stream_id(${sql.placeholder('plantId')}::text, k.key)
      cross join lateral ${currentShape(sql`k.key`)}
      where k.owner = ${sql.placeholder('owner')}::text`)
  return db.with(stream).select().from(stream).orderBy(stream.streamVersion).prepare('read_plant_stream')
})

export async function readPlantStream(
  db: Executor,
  owner: string,
  plantId: bigint,
): Promise<RecordedEvent[]> {
  const rows = await plantStreamQuery(db).execute({ owner, plantId: plantId.toString() })
  return rows.map((row) => ({
    position: BigInt(row.position),
    streamVersion: row.streamVersion,
    type: row.type,
    schemaVersion: row.schemaVersion,
    data: parseEventData(row.data),
    recordedAt: new Date(row.recordedAt),
  }))
}

// One event for one plant's stream, appended only if the stream is at `expectedVersion`.
export type StreamAppend = {
  owner: string
  plantId: bigint
  requestId: string
  // The W3C traceparent of the request that made it, sealed with the request id; none untraced.
  traceparent?: string
  expectedVersion: number
  event: NewEvent
}

// The projection: the `plants` row each event makes, as SQL over rows shaped like the events
// table, so that PostgreSQL applies it where the events are. Each event is opened with its
// owner's key, from `keys` (rows of pseudonym, owner and key; by default the keys that can be
// read), so that an erased owner's events fold to nothing. A rebuild runs it on batches of the log
// and a verification on the whole log (replay/): the events never travel to this process and back.
export function projectInto(table: PlantsTable = plants, keys: SQL = liveKeys) {
  return (rows: SQL): SQL =>
    projectOpened(table)(sql`(
      select e.position, e.type, e.schema_version, k.owner, ${openedData(sql`e`, sql`k.key`)} as data
      from ${rows} as e join ${keys} as k on k.pseudonym = ${pseudonymOf(sql`e`)})`)
}

// The same over events already opened: rows of position, type, schema_version, owner (the subject)
// and data as written. What each stored shape of an event means is defined once, by the database
// function plant_store_event (migrations 0004, 0006). Appends give it the data they have just
// sealed, as they had it, rather than open it again.
export function projectOpened(table: PlantsTable = plants) {
  return (rows: SQL): SQL => sql`
    insert into ${table} (owner, id, name, tag, position)
    select o.owner, plant.id, plant.name, plant.tag, o.position
    from ${rows} as o
    cross join lateral plant_store_event(o.type, o.schema_version, o.data, o.position) as plant`
}

// Whether the event at `event` (a row of the events table) has its row in `plants`, or makes none
// (its owner erased, or an event that describes no plant).
export function isProjected(event: SQL): SQL {
  return sql`(${event}.type <> 'PlantCreated' or not exists (
      select 1 from ${liveKeys} as k where k.pseudonym = ${pseudonymOf(event)}) or exists (
      select 1 from ${plants} as p join ${liveKeys} as k on p.owner = k.owner
      where k.pseudonym = ${pseudonymOf(event)} and p.position = ${event}.position))`
}

// A batch of appends, to as many streams, in one prepared statement that also finds or makes each
// owner's key and projects the events, so one transaction (a GET after a 200 sees the plant), one
// round trip and one commit, its text built once.
// - Each owner's appends are serialised by an advisory lock on the owner, so one owner's positions
//   commit in order and paging never skips a late commit; a batch takes its owners' locks, in
//   sorted order (so batches never deadlock), before it reads a key or draws a position: the
//   lock's row gates every later step (a one-time filter, evaluated first).
// - An owner's key is read FOR SHARE: one an erasure marked while this batch waited for the lock
//   is then skipped (its latest version is checked again), and a new key is made, so nothing is
//   ever written under a key being destroyed. A key another batch made while this one waited is
//   not in this statement's snapshot: its insert conflicts, and ON CONFLICT DO UPDATE returns it
//   (DO NOTHING would return no key).
// - An append whose stream version is taken, by an earlier commit or a concurrent writer, is
//   skipped on the (stream_id, stream_version) unique key without failing the others.
// Results come back by input order (`n`): only the database can compute a stream id.
function appendStatement(input: (db: Executor) => SQL, name: string) {
  return preparedQuery((db) => {
    const cte = (alias: string, query: SQL) => db.$with(alias, {}).as(query)
    const inputs = cte('input', input(db))
    const locked = cte(
      'locked',
      sql`select count(pg_advisory_xact_lock(key)) as locks
          from (select distinct hashtextextended(owner, 0) as key from input order by 1) as keys`,
    )
    // One probe of the owners' index per owner of the batch, whatever the table's size when the
    // statement was planned (a join planned on a small table scans it whole once it is large).
    const found = cte(
      'found',
      sql`select k.pseudonym, k.owner, k.key
          from (select distinct owner from input) as owners
          cross join lateral (
            select ${ownerKeys.pseudonym}, ${ownerKeys.owner}, ${ownerKeys.key} from ${ownerKeys}
            where ${ownerKeys.owner} = owners.owner and not ${ownerKeys.erasing}
            for share) as k
          where (select locks from locked) is not null`,
    )
    const made = cte(
      'made',
      sql`insert into ${ownerKeys} (pseudonym, owner, key)
          select encode(gen_random_bytes(16), 'hex'), owners.owner, ${newWrappedKey}
          from (select distinct owner from input) as owners
          where (select locks from locked) is not null
            and not exists (select 1 from found where found.owner = owners.owner)
          on conflict (owner) where not erasing do update set owner = excluded.owner
          returning pseudonym, owner, key`,
    )
    const keys = cte(
      'keys',
      sql`select pseudonym, owner, ${unwrappedKey(sql`key`)} as key from (select * from found union all select * from made) as stored`,
    )
    const sealed = db
      .$with('sealed', { n: sql<number>`n`.as('n'), streamId: sql<string>`stream_id`.as('stream_id') })
      .as(sql`
      select input.n, input.owner, input.data as opened,
             plant_store_stream_id(input.data->>'id', keys.key) as stream_id, input.version,
             input.type, input.schema_version, input.recorded_at,
             jsonb_build_object('sealed', plant_store_seal(input.data::text, keys.key)) as data,
             jsonb_build_object('pseudonym', keys.pseudonym,
               'sealed', plant_store_seal(jsonb_strip_nulls(jsonb_build_object('requestId', input.request_id, 'traceparent', input.traceparent))::text, keys.key)) as metadata
      from input join keys on keys.owner = input.owner`)
    const appended = db
      .$with('appended', {
        position: sql<string>`position`.as('position'),
        streamId: sql<string>`stream_id`.as('stream_id'),
      })
      .as(sql`
        insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
        select stream_id, version, type, schema_version, data, metadata, recorded_at from sealed order by n
        on conflict (stream_id, stream_version) do nothing
        returning position, stream_id, stream_version, type, schema_version, data, metadata`)
    const projected = cte(
      'projected',
      projectOpened(plants)(sql`(
        select appended.position, appended.type, appended.schema_version, sealed.owner, sealed.opened as data
        from appended join sealed using (stream_id))`),
    )
    return db
      .with(inputs, locked, found, made, keys, sealed, appended, projected)
      .select({ n: sql<number>`sealed.n::int`, position: sql<string>`appended.position::text` })
      .from(appended)
      .innerJoin(sealed, sql`sealed.stream_id = appended.stream_id`)
      .prepare(name)
  })
}

// The batch's creates, handed over as one JSON array: each value's fields in its own column.
const batchAppend = appendStatement(
  () => sql`
    select n, value->>'owner' as owner, value->>'requestId' as request_id,
           value->>'traceparent' as traceparent, value->'data' as data,
           (value->>'version')::int as version, value->>'type' as type,
           (value->>'schemaVersion')::int as schema_version, (value->>'recordedAt')::timestamptz as recorded_at
    from jsonb_array_elements(${sql.placeholder('appends')}::jsonb) with ordinality as e(value, n)`,
  'append_events',
)

// A lone append, the usual case when creates are few, without the batch's JSON array: its values
// as parameters, through the same statement.
const loneAppend = appendStatement(() => {
  const value = (name: string, type: string) => sql`${sql.placeholder(name)}::${sql.raw(type)}`
  return sql`
    select 1 as n, ${value('owner', 'text')} as owner, ${value('requestId', 'text')} as request_id,
           ${value('traceparent', 'text')} as traceparent,
           ${value('data', 'jsonb')} as data, ${value('version', 'int')} as version,
           ${value('type', 'text')} as type, ${value('schemaVersion', 'int')} as schema_version,
           ${value('recordedAt', 'timestamptz')} as recorded_at`
}, 'append_event')

function appendValues({ owner, requestId, traceparent, expectedVersion, event }: StreamAppend) {
  return {
    owner,
    requestId,
    traceparent: traceparent ?? null,
    version: expectedVersion + 1,
    type: event.type,
    schemaVersion: event.schemaVersion,
    data: event.data,
    recordedAt: event.recordedAt.toISOString(),
  }
}

// The position of each append's event, in the order given; undefined where the stream was no longer
// at the expected version, and nothing was appended for it.
export async function appendEvents(db: Executor, appends: StreamAppend[]): Promise<(bigint | undefined)[]> {
  const [lone] = appends
  if (lone === undefined) return []
  const rows =
    appends.length === 1
      ? await loneAppend(db).execute({ ...appendValues(lone), data: JSON.stringify(lone.event.data) })
      : await batchAppend(db).execute({ appends: JSON.stringify(appends.map(appendValues)) })
  const positions = new Map(rows.map((row) => [Number(row.n), BigInt(row.position)]))
  return appends.map((_, index) => positions.get(index + 1))
}
