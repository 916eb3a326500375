import { Buffer } from 'node:buffer'
import { asc, eq, type SQL, sql } from 'drizzle-orm'
import type { Keyring, StoredKey } from '../crypto/keyring.ts'
import { seal, streamIdOf } from '../crypto/sealing.ts'
import { type Executor, preparedQuery } from '../database/database.ts'
import { readStoredPlant } from '../domain/plant.ts'
import { lockOwners } from '../locks/owner-lock.ts'
import type { AppendKey, OwnerKeyCache } from './owner-keys.ts'
import { events, ownerKeys, plants } from './schema.ts'
import { openedData } from './sealed-parts.ts'

export type NewEvent = { type: string; schemaVersion: number; data: unknown; recordedAt: Date }

// An event of one plant's stream, opened: its data in today's shape.
export type RecordedEvent = NewEvent & { position: bigint; streamVersion: number }

// One plant's stream, found by its id under its owner's key, opened here (the raw key opened from
// the keyring at each use: it is not held across the read, crypto/keyring.ts).
const plantStreamQuery = preparedQuery((db) =>
  db
    .select({
      position: events.position,
      streamVersion: events.streamVersion,
      type: events.type,
      schemaVersion: events.schemaVersion,
      data: events.data,
      recordedAt: events.recordedAt,
    })
    .from(events)
    .where(eq(events.streamId, sql.placeholder('streamId')))
    .orderBy(asc(events.streamVersion))
    .prepare('read_plant_stream'),
)

export async function readPlantStream(
  db: Executor,
  keyring: Keyring,
  key: StoredKey,
  plantId: bigint,
): Promise<RecordedEvent[]> {
  const streamId = streamIdOf(plantId, keyring.open(key))
  const rows = await plantStreamQuery(db).execute({ streamId })
  return rows.map((row) => ({ ...row, data: openedData({ ...row, streamId }, keyring.open(key)) }))
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

// What became of an append: its event's position; `taken`, the stream was no longer at the
// expected version and nothing was appended; `rekey`, the owner's key the append was sealed under
// is no longer live (an erasure began) or another writer stored the owner's first key first.
export type Appended = { position: bigint } | { taken: StoredKey } | 'rekey'

// A batch of appends, to as many streams, sealed here, in one prepared statement that also stores
// new owners' keys and projects the events: one transaction (a GET after a 200 sees the plant),
// one round trip and one commit, its text built once.
// - Each owner's appends are serialised, so one owner's positions commit in order and paging never
//   skips a late commit. An owner whose key is stored: by a lock of the key's row (FOR NO KEY
//   UPDATE), taken in pseudonym order (so batches never deadlock) before the events are inserted.
//   The lock also checks the key is live: one an erasure marked (or deleted) while this batch
//   waited is then not found (its latest version is checked again, and an erasure's FOR UPDATE
//   waits for the lock), so nothing is ever written under a key being destroyed; those appends come
//   back `rekey`.
// - A new owner's: by the owner's advisory lock, which an erasure and an import take too (an import
//   brings only owners the store does not have), in sorted order before anything else: the lock's
//   row gates every later step (a one-time filter, evaluated first). The key is inserted unless
//   another writer stored one first (ON CONFLICT DO NOTHING): then that owner's appends come back
//   `rekey`, to be sealed under the stored key, whose row lock orders them after the first.
// - An append whose stream version is taken, by an earlier commit or a concurrent writer, is
//   skipped on the (stream_id, stream_version) unique key without failing the others.
function appendStatement(input: (db: Executor) => SQL, name: string) {
  return preparedQuery((db) => {
    const cte = (alias: string, query: SQL) => db.$with(alias, {}).as(query)
    const inputs = cte('input', input(db))
    const locked = cte('locked', lockOwners(sql`input where new_key is not null`))
    const made = cte(
      'made',
      sql`insert into ${ownerKeys} (pseudonym, owner, key)
          select distinct on (owner) pseudonym, owner, new_key from input
          where new_key is not null and (select locks from locked) is not null
          on conflict (owner) where not erasing do nothing
          returning pseudonym`,
    )
    // One probe of the keys' primary key per owner of the batch, in order.
    const kept = cte(
      'kept',
      sql`select k.pseudonym
          from (select distinct pseudonym from input where new_key is null order by 1) as owners
          cross join lateral (
            select ${ownerKeys.pseudonym} from ${ownerKeys}
            where ${ownerKeys.pseudonym} = owners.pseudonym and not ${ownerKeys.erasing}
            for no key update) as k
          where (select locks from locked) is not null`,
    )
    const live = cte('live', sql`select pseudonym from made union all select pseudonym from kept`)
    const appended = db
      .$with('appended', {
        position: sql<string>`position`.as('position'),
        streamId: sql<string>`stream_id`.as('stream_id'),
      })
      .as(sql`
        insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
        select stream_id, version, type, schema_version, data, metadata, recorded_at from input
        where pseudonym in (select pseudonym from live)
        order by n
        on conflict (stream_id, stream_version) do nothing
        returning position, stream_id`)
    const projected = cte(
      'projected',
      sql`insert into ${plants} (owner, id, name, tag, position)
          select input.owner, input.plant_id, input.name, input.tag, appended.position
          from appended join input using (stream_id)
          where input.plant_id is not null`,
    )
    return db
      .with(inputs, locked, made, kept, live, appended, projected)
      .select({
        n: sql<number>`input.n::int`,
        position: sql<string | null>`appended.position::text`,
        live: sql<boolean>`input.pseudonym in (select pseudonym from live)`,
      })
      .from(sql`input`)
      .leftJoin(appended, sql`appended.stream_id = input.stream_id`)
      .prepare(name)
  })
}

// The batch's appends, handed over as one JSON array: each value's fields in its own column.
const batchAppend = appendStatement(
  () => sql`
    select n, value->>'owner' as owner, value->>'pseudonym' as pseudonym,
           decode(value->>'newKey', 'base64') as new_key, value->>'streamId' as stream_id,
           (value->>'version')::int as version, value->>'type' as type,
           (value->>'schemaVersion')::int as schema_version, value->'data' as data,
           value->'metadata' as metadata, (value->>'recordedAt')::timestamptz as recorded_at,
           (value->>'plantId')::bigint as plant_id, value->>'name' as name, value->>'tag' as tag
    from jsonb_array_elements(${sql.placeholder('appends')}::jsonb) with ordinality as e(value, n)`,
  'append_events',
)

// A lone append of an owner whose key is stored, the usual case when creates are few: the same
// steps for one append, each a plain probe or insert, with its values as parameters. Its plan has
// no step a batch needs and a lone create does not (no sorting, no distinct, no set of owners, no
// advisory lock): it costs PostgreSQL a quarter less than the batch's statement for one append
// (docs/performance.md). The key's row lock orders the owner's appends and checks the key is live.
const knownOwnerAppend = preparedQuery((db) => {
  const value = (name: string, type: string) => sql`${sql.placeholder(name)}::${sql.raw(type)}`
  const kept = db.$with('kept', { pseudonym: sql<string>`pseudonym`.as('pseudonym') }).as(sql`
    select ${ownerKeys.pseudonym} from ${ownerKeys}
    where ${ownerKeys.pseudonym} = ${value('pseudonym', 'text')} and not ${ownerKeys.erasing}
    for no key update`)
  const appended = db.$with('appended', { position: sql<string>`position`.as('position') }).as(sql`
    insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select ${value('streamId', 'text')}, ${value('version', 'int')}, ${value('type', 'text')},
           ${value('schemaVersion', 'int')}, ${value('data', 'jsonb')}, ${value('metadata', 'jsonb')},
           ${value('recordedAt', 'timestamptz')}
    from kept
    on conflict (stream_id, stream_version) do nothing
    returning position`)
  const projected = db.$with('projected', {}).as(sql`
    insert into ${plants} (owner, id, name, tag, position)
    select ${value('owner', 'text')}, ${value('plantId', 'bigint')}, ${value('name', 'text')},
           ${value('tag', 'text')}, position
    from appended where ${value('plantId', 'bigint')} is not null`)
  return db
    .with(kept, appended, projected)
    .select({
      n: sql<number>`1`,
      position: sql<string | null>`(select position::text from appended)`,
      live: sql<boolean>`exists (select from kept)`,
    })
    .from(sql`(values (1)) as lone`)
    .prepare('append_known_owner')
})

// An append as the statement takes it: sealed under its owner's key, with the `plants` row it makes.
function sealedValues(
  { owner, plantId, requestId, traceparent, expectedVersion, event }: StreamAppend,
  key: AppendKey,
  raw: Uint8Array,
) {
  const metadata = JSON.stringify(traceparent === undefined ? { requestId } : { requestId, traceparent })
  const plant = readStoredPlant(event.type, event.schemaVersion, event.data)
  const place = { streamId: streamIdOf(plantId, raw), streamVersion: expectedVersion + 1 }
  return {
    owner,
    pseudonym: key.pseudonym,
    newKey: key.made ? Buffer.from(key.wrapped).toString('base64') : null,
    streamId: place.streamId,
    version: place.streamVersion,
    type: event.type,
    schemaVersion: event.schemaVersion,
    data: seal(JSON.stringify(event.data), raw, 'data', place),
    metadata: { pseudonym: key.pseudonym, ...seal(metadata, raw, 'metadata', place) },
    recordedAt: event.recordedAt.toISOString(),
    plantId: typeof plant === 'string' ? null : plant.id.toString(),
    name: typeof plant === 'string' ? null : plant.name,
    tag: typeof plant === 'string' ? null : plant.tag,
  }
}

// Each append's outcome, in the order given, its owner's key found or made through `keys`.
export async function appendEvents(
  db: Executor,
  keys: OwnerKeyCache,
  appends: StreamAppend[],
): Promise<Appended[]> {
  if (appends.length === 0) return []
  const found = await keys.find(
    db,
    appends.map((append) => append.owner),
  )
  const keyOf = (append: StreamAppend) => found.get(append.owner) as AppendKey
  const values = appends.map((append) =>
    sealedValues(append, keyOf(append), keys.keyring.open(keyOf(append))),
  )
  const [lone] = values
  const rows =
    values.length === 1 && lone?.newKey === null
      ? await knownOwnerAppend(db).execute({
          ...lone,
          data: JSON.stringify(lone.data),
          metadata: JSON.stringify(lone.metadata),
        })
      : await batchAppend(db).execute({ appends: JSON.stringify(values) })
  const outcomes = new Map(rows.map((row) => [Number(row.n), row]))
  return appends.map((append, index) => {
    const row = outcomes.get(index + 1)
    const key = keyOf(append)
    if (!row?.live) {
      keys.drop(append.owner, key.pseudonym)
      return 'rekey'
    }
    if (key.made) keys.keep(append.owner, key)
    const { pseudonym, wrapped } = key
    return row.position === null ? { taken: { pseudonym, wrapped } } : { position: BigInt(row.position) }
  })
}
