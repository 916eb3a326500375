import { type SQL, sql } from 'drizzle-orm'
import { type Database, type Executor, rowsOf, type Transaction } from './database.ts'
import { projectInto } from './event-store.ts'
import { events } from './schema.ts'

// An import's lines wait in a table of their own until every one has been checked: filled batch by
// batch in short transactions of their own, so a slow or paused input holds no transaction and no
// lock on the log. Only the final insert (appendStaged) touches the events table.
export type Staging = { table: ReturnType<typeof sql.identifier>; name: string }

export type StagedLine = { line: number; text: string; owner: string; plantId: bigint }

// A line that breaks a rule across lines, and the rule.
export type Clash = { line: number; rule: string }

export async function createStaging(db: Database, name: string): Promise<Staging> {
  const table = sql.identifier(name)
  await db.execute(sql`
    create unlogged table ${table} (
      line int primary key, position bigint not null, stream_id text not null,
      stream_version int not null, owner text not null, plant_id bigint not null, event jsonb not null)`)
  return { table, name }
}

// The lines are handed over as one JSON array; PostgreSQL parses each event itself, so its data
// keeps every digit and character exactly as exported.
export async function stageLines(db: Database, { table }: Staging, lines: StagedLine[]): Promise<void> {
  if (lines.length === 0) return
  const array = `[${lines
    .map(
      ({ line, text, owner, plantId }) =>
        `{"n":${line},"o":${JSON.stringify(owner)},"i":"${plantId}","e":${text}}`,
    )
    .join(',')}]`
  await db.execute(sql`
    insert into ${table} (line, position, stream_id, stream_version, owner, plant_id, event)
    select (x->>'n')::int, (x->'e'->>'position')::bigint, x->'e'->>'streamId',
           (x->'e'->>'streamVersion')::int, x->>'o', (x->>'i')::bigint, x->'e'
    from jsonb_array_elements(${array}::jsonb) as x`)
}

// The first line, if any, that repeats an earlier one's plant (one plant per owner and id) or, when
// positions are kept, its position.
export async function firstClashInFile(db: Executor, { table }: Staging, keepPositions: boolean) {
  const plant = firstRow(
    db,
    sql`select line, 'owner ' || to_json(owner)::text || ' has plant ' || plant_id || ' at line ' || first
              || ' already (one plant per owner and id)' as rule
        from (select line, owner, plant_id, min(line) over (partition by owner, plant_id) as first from ${table}) s
        where line <> first order by line limit 1`,
  )
  const position = keepPositions
    ? firstRow(
        db,
        sql`select line, 'position ' || position || ' is also at line ' || first
                  || ' (each event has its own position)' as rule
            from (select line, position, min(line) over (partition by position) as first from ${table}) s
            where line <> first order by line limit 1`,
      )
    : undefined
  const clashes = (await Promise.all([plant, position])).filter((clash) => clash !== undefined)
  return clashes.sort((a, b) => a.line - b.line)[0]
}

// Under the append lock: the first line that the store makes unfoldable, a plant its owner already
// has or a stream version that does not continue the stream's (gaps and overlaps alike).
export async function firstClashWithStore(tx: Transaction, { table }: Staging): Promise<Clash | undefined> {
  const existing = await firstRow(
    tx,
    sql`select line, 'owner ' || to_json(owner)::text || ' already has plant ' || plant_id
              || ' in the store (one plant per owner and id)' as rule
        from ${table} s
        where exists (select 1 from plants p where p.owner = s.owner and p.id = s.plant_id)
           or exists (select 1 from ${events} e where e.stream_id = s.stream_id)
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
              from ${table} s) checked
        where stream_version <> expected order by line limit 1`,
  )
}

// Appends the staged events in line order and projects them, in the caller's transaction.
// `keepPositions` (an empty store) keeps their positions; otherwise they follow the head.
export async function appendStaged(tx: Transaction, { table }: Staging, keepPositions: boolean) {
  const position = keepPositions
    ? sql`s.position`
    : sql`nextval(pg_get_serial_sequence('events', 'position'))`
  const result = await tx.execute(sql`
    with inserted as (
      insert into ${events} (position, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      select ${position}, s.stream_id, s.stream_version, s.event->>'type', (s.event->>'schemaVersion')::int,
             s.event->'data', s.event->'metadata', (s.event->>'recordedAt')::timestamptz
      from (select * from ${table} order by line) s
      returning *),
    projected as (${projectInto()(sql`inserted`)})
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

// The staged owners' append locks, taken as the live path takes them (appendStatement in
// event-store.ts), in key order: their creates wait for the import, so each owner's positions
// still commit in order; every other owner's carry on.
export function lockStagedOwners({ table }: Staging) {
  return async (tx: Transaction): Promise<void> => {
    await tx.execute(sql`
      select count(pg_advisory_xact_lock(key))
      from (select distinct hashtextextended(owner, 0) as key from ${table} order by 1) as keys`)
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
