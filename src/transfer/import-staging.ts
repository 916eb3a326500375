import { type SQL, sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import { type Database, type Executor, rowsOf, type Transaction } from '../database/database.ts'
import { erasedOwners, events, ownerKeys, plants } from '../event-log/schema.ts'
import { lockOwners } from '../locks/owner-lock.ts'
import { sealPlainOwners } from './plain-owners.ts'

// An import's lines wait in a table of their own until every one has been checked: filled batch by
// batch in short transactions of their own, so a slow or paused input holds no transaction and no
// lock on the log. Only the final insert (appendStaged) touches the events table.
export type Staging = { table: ReturnType<typeof sql.identifier>; name: string }

// A checked line of an export (transfer/import-lines.ts): an event, an owner's key, or an erased
// pseudonym. An event's `owner` and `plantId` are null when it names no readable plant; `sealed`
// is false for a version 1 (plaintext) event, sealed on its way in; `resolved` is false for one whose
// pseudonym only the target store can vouch for (erased there).
export type StagedLine =
  | {
      kind: 'event'
      line: number
      text: string
      pseudonym: string | null
      owner: string | null
      plantId: bigint | null
      plant: { name: string; tag: string | null } | null
      sealed: boolean
      resolved: boolean
    }
  // `key`: wrapped under the importing store's first key-encryption key, in base64.
  | { kind: 'key'; line: number; pseudonym: string; owner: string; key: string }
  | { kind: 'erased'; line: number; pseudonym: string; erasedAt: string }

// A line that breaks a rule across lines, and the rule.
export type Clash = { line: number; rule: string }

// One table for the three kinds of line: `key` holds an owner's key, wrapped (a key line's),
// `event` the event as the file holds it (sealed on its way in when it is plaintext), `name` and
// `tag` the row an event of a readable owner makes in `plants`.
export async function createStaging(db: Database, name: string): Promise<Staging> {
  const table = sql.identifier(name)
  await db.execute(sql`
    create unlogged table ${table} (
      line int primary key, kind text not null, pseudonym text, owner text, position bigint,
      stream_id text, stream_version int, plant_id bigint, name text, tag text, sealed boolean,
      resolved boolean, event jsonb, key bytea, erased_at timestamptz)`)
  return { table, name }
}

// The lines are handed over as one JSON array; PostgreSQL parses each event itself, so its data
// keeps every digit and character exactly as exported.
export async function stageLines(db: Database, { table }: Staging, lines: StagedLine[]): Promise<void> {
  if (lines.length === 0) return
  const array = `[${lines.map(stagedValue).join(',')}]`
  await db.execute(sql`
    insert into ${table} (line, kind, pseudonym, owner, position, stream_id, stream_version, plant_id,
                          name, tag, sealed, resolved, event, key, erased_at)
    select (x->>'n')::int, x->>'k', x->>'p', x->>'o', (x->'e'->>'position')::bigint, x->'e'->>'streamId',
           (x->'e'->>'streamVersion')::int, (x->>'i')::bigint, x->'v'->>'name', x->'v'->>'tag',
           (x->>'s')::boolean, (x->>'r')::boolean, x->'e', decode(x->>'key', 'base64'), (x->>'t')::timestamptz
    from jsonb_array_elements(${array}::jsonb) as x`)
}

function stagedValue(line: StagedLine): string {
  const common = `"n":${line.line},"k":"${line.kind}","p":${JSON.stringify(line.pseudonym)}`
  switch (line.kind) {
    case 'event':
      return `{${common},"o":${JSON.stringify(line.owner)},"i":${line.plantId === null ? 'null' : `"${line.plantId}"`},"v":${JSON.stringify(line.plant)},"s":${line.sealed},"r":${line.resolved},"e":${line.text}}`
    case 'key':
      return `{${common},"o":${JSON.stringify(line.owner)},"key":${JSON.stringify(line.key)}}`
    case 'erased':
      return `{${common},"t":${JSON.stringify(line.erasedAt)}}`
  }
}

// The first line, if any, that repeats an earlier one's plant (one plant per owner and id) or, when
// positions are kept, its position.
export async function firstClashInFile(db: Executor, { table }: Staging, keepPositions: boolean) {
  const plant = firstRow(
    db,
    sql`select line, 'owner ' || to_json(owner)::text || ' has plant ' || plant_id || ' at line ' || first
              || ' already (one plant per owner and id)' as rule
        from (select line, owner, plant_id, min(line) over (partition by owner, plant_id) as first
              from ${table} where kind = 'event' and plant_id is not null) s
        where line <> first order by line limit 1`,
  )
  const position = keepPositions
    ? firstRow(
        db,
        sql`select line, 'position ' || position || ' is also at line ' || first
                  || ' (each event has its own position)' as rule
            from (select line, position, min(line) over (partition by position) as first
                  from ${table} where kind = 'event') s
            where line <> first order by line limit 1`,
      )
    : undefined
  const clashes = (await Promise.all([plant, position])).filter((clash) => clash !== undefined)
  return clashes.sort((a, b) => a.line - b.line)[0]
}

// Under the append lock: the first line whose owner or pseudonym the store already knows. A key
// line's owner may have no key in the store, live or being erased (two keys for one sub would
// collide in plants), nor its pseudonym be the store's or erased there; an erased line's pseudonym
// may not be live there; an event whose pseudonym the file does not name must be erased there. A
// plaintext (version 1) event names its owner by the sub, which the store keeps nothing of once
// erased (docs/erasure.md): it is told by the log instead, an erased owner's event at the same
// position and recorded time being this one (an export of this store, or of one it was moved from).
export async function firstOwnerClash(tx: Transaction, { table }: Staging): Promise<Clash | undefined> {
  return firstRow(
    tx,
    sql`select line, rule from (
          select s.line, case
            when s.kind = 'key' and exists (select 1 from ${ownerKeys} k where k.owner = s.owner)
              then 'owner ' || to_json(s.owner)::text
                   || ' is an owner the target store already has: two keys for one sub would collide in plants'
            when s.kind = 'key' and exists (select 1 from ${erasedOwners} e where e.pseudonym = s.pseudonym)
              then 'pseudonym ' || s.pseudonym || ' was erased in the target store: its owner cannot come back'
            when s.kind = 'key' and exists (select 1 from ${ownerKeys} k where k.pseudonym = s.pseudonym)
              then 'pseudonym ' || s.pseudonym || ' is in the target store already, with another owner'
            when s.kind = 'erased' and exists (
                   select 1 from ${ownerKeys} k where k.pseudonym = s.pseudonym and not k.erasing)
              then 'pseudonym ' || s.pseudonym
                   || ' is erased in the file but readable in the target store: erase its owner there first'
            when s.kind = 'event' and not s.sealed and exists (
                   select 1 from ${events} e
                   where e.position = s.position and e.recorded_at = (s.event->>'recordedAt')::timestamptz
                     and (exists (select 1 from ${erasedOwners} x where x.pseudonym = e.metadata->>'pseudonym')
                          or exists (select 1 from ${ownerKeys} k
                                     where k.pseudonym = e.metadata->>'pseudonym' and k.erasing)))
              then 'this plaintext event is the target store''s event at position ' || s.position
                   || ' (recorded at the same time), whose owner the store has erased: its owner cannot come back'
            when s.kind = 'event' and not s.resolved
                 and not exists (select 1 from ${erasedOwners} e where e.pseudonym = s.pseudonym)
                 and not exists (select 1 from ${ownerKeys} k where k.pseudonym = s.pseudonym and k.erasing)
              then 'pseudonym ' || s.pseudonym
                   || ' has neither a key line nor an erased line in the file, and the target store has not erased it'
            end as rule
          from ${table} s) checked
        where rule is not null order by line limit 1`,
  )
}

// Under the append lock: seals each plaintext (version 1) event in the service under its owner's
// key, found or made (transfer/plain-owners.ts), so that it is checked and appended as any other.
export async function keyPlainOwners(tx: Transaction, keyring: Keyring, staging: Staging): Promise<void> {
  await sealPlainOwners(tx, keyring, staging.table)
}

// Under the append lock, once the owners are keyed: the first line that the store makes
// unfoldable, a plant its owner already has or a stream version that does not continue the
// stream's (gaps and overlaps alike).
export async function firstClashWithStore(tx: Transaction, { table }: Staging): Promise<Clash | undefined> {
  const existing = await firstRow(
    tx,
    sql`select line, 'owner ' || to_json(owner)::text || ' already has plant ' || plant_id
              || ' in the store (one plant per owner and id)' as rule
        from ${table} s
        where kind = 'event' and plant_id is not null
          and exists (select 1 from ${plants} p where p.owner = s.owner and p.id = s.plant_id)
        order by line limit 1`,
  )
  if (existing) return existing
  return firstRow(
    tx,
    sql`select line, 'stream ' || to_json(stream_id)::text || ' version ' || stream_version
              || ' does not continue the stream (expected version ' || expected || ')' as rule
        from (select s.line, s.stream_id, s.stream_version,
                     coalesce((select max(e.stream_version) from ${events} e where e.stream_id = s.stream_id), 0)
                       + row_number() over (partition by s.stream_id order by s.line) as expected
              from ${table} s where kind = 'event') checked
        where stream_version <> expected order by line limit 1`,
  )
}

// Appends the staged lines and projects the events, in the caller's transaction: the keys and the
// erased pseudonyms first, then the events in line order, each with the `plants` row the line
// checker read from it (its owner's key is one of the file's, live once stored). `keepPositions`
// (an empty store) keeps their positions; otherwise they follow the head.
export async function appendStaged(tx: Transaction, { table }: Staging, keepPositions: boolean) {
  await tx.execute(sql`
    insert into ${ownerKeys} (pseudonym, owner, key)
    select pseudonym, owner, key from ${table} where kind = 'key' order by line`)
  await tx.execute(sql`
    insert into ${erasedOwners} (pseudonym, erased_at)
    select pseudonym, erased_at from ${table} where kind = 'erased' order by line
    on conflict (pseudonym) do nothing`)
  const position = keepPositions
    ? sql`s.position`
    : sql`nextval(pg_get_serial_sequence('events', 'position'))`
  const result = await tx.execute(sql`
    with inserted as (
      insert into ${events} (position, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      select ${position}, s.stream_id, s.stream_version, s.event->>'type', (s.event->>'schemaVersion')::int,
             s.event->'data', s.event->'metadata', (s.event->>'recordedAt')::timestamptz
      from (select * from ${table} where kind = 'event' order by line) s
      returning position, stream_id, stream_version),
    projected as (
      insert into ${plants} (owner, id, name, tag, position)
      select s.owner, s.plant_id, s.name, s.tag, inserted.position
      from inserted join ${table} as s
        on s.kind = 'event' and s.stream_id = inserted.stream_id and s.stream_version = inserted.stream_version
      where s.owner is not null and s.plant_id is not null and s.name is not null
        and exists (select 1 from ${ownerKeys} as k where k.owner = s.owner and not k.erasing))
    select count(*)::int as events from inserted`)
  if (keepPositions) {
    await tx.execute(
      sql`select setval(pg_get_serial_sequence('events', 'position'), max(position)) from events having count(*) > 0`,
    )
  }
  return rowsOf<{ events: number }>(result)[0]?.events ?? 0
}

export async function countStagedOwners(db: Executor, { table }: Staging): Promise<number> {
  const [row] = rowsOf<{ owners: number }>(
    await db.execute(sql`select count(distinct owner)::int as owners from ${table}`),
  )
  return Number(row?.owners ?? 0)
}

// The staged owners' append locks, taken as the live path takes them for a new owner
// (appendStatement in event-log/append.ts), in key order: their creates wait for the import, so each
// owner's positions still commit in order; every other owner's carry on. (An owner the store
// already has is refused, so no create of a staged owner locks a stored key instead.)
export function lockStagedOwners({ table }: Staging) {
  return async (tx: Transaction): Promise<void> => {
    await tx.execute(lockOwners(sql`${table} where owner is not null`))
  }
}

export async function isLogEmpty(db: Executor): Promise<boolean> {
  return rowsOf(await db.execute(sql`select 1 from ${events} limit 1`)).length === 0
}

export async function dropStaging(db: Database, { table }: Staging): Promise<void> {
  await db.execute(sql`drop table if exists ${table}`)
}

async function firstRow(db: Executor, query: SQL): Promise<Clash | undefined> {
  const [row] = rowsOf<Clash>(await db.execute(query))
  return row ? { line: Number(row.line), rule: row.rule } : undefined
}
