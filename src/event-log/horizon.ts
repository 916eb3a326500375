import { type SQL, sql } from 'drizzle-orm'
import { type Executor, preparedQuery, rowsOf } from '../database/database.ts'
import { events } from './schema.ts'

// The settled log: every event up to a position, none above it, read in position order. A
// position is taken when a row is inserted but becomes visible when its transaction commits, so
// the log commits out of position order: a large transaction (an import) commits positions below
// ones already read. A reader that moved on by position, or by transaction, would skip or reorder
// them. So positions are read only up to a horizon below which nothing can commit any more.
//
// A horizon is found in two steps. A probe reads the last position handed out, then the
// transactions holding the events table's ROW EXCLUSIVE lock, which every insert takes before it
// draws a position and keeps until it ends: only they can still commit a position at or below it.
// The horizon settles for any later statement whose snapshot has none of them running. The probe
// and the read are two statements, so that the read's snapshot comes after the probe's look at
// the locks.
export type Horizon = {
  // Every position up to this one was handed out before the probe.
  position: bigint
  // The newest transaction id (xid8, as a number) that might still commit one of them; 0: none.
  newestWriter: bigint
}

// How the probe names the transaction of a lock holder: xid8 from the 32-bit xid of pg_locks,
// taken at or above the snapshot's xmin (every running transaction is).
const probeStatement = sql`
  select seq.last::text as position, lockers.unresolved::int as unresolved, lockers.newest::text as newest
  from (select case when is_called then last_value else last_value - 1 end as last
        from events_position_seq) as seq
  cross join lateral (
    select count(*) filter (where t.transactionid is null and not exists (
             select 1 from pg_locks as w where w.virtualtransaction = l.virtualtransaction and not w.granted)) as unresolved,
           coalesce(max(x.xmin + ((t.transactionid::text::bigint - x.xmin) & 4294967295)), 0) as newest
    from pg_locks as l
    left join pg_locks as t
      on t.locktype = 'transactionid' and t.virtualtransaction = l.virtualtransaction and t.granted
    cross join (select pg_snapshot_xmin(pg_current_snapshot())::text::bigint as xmin) as x
    where seq.last is not null
      and l.locktype = 'relation' and l.relation = 'events'::regclass and l.mode = 'RowExclusiveLock'
      and l.granted and l.pid is distinct from pg_backend_pid()
      and l.database = (select oid from pg_database where datname = current_database())
  ) as lockers`

// A horizon as of now, or undefined when a writer is caught between drawing a position and
// taking its transaction id (microseconds): probe again.
export async function probeHorizon(db: Executor): Promise<Horizon | undefined> {
  const [row] = rowsOf<{ position: string; unresolved: number; newest: string }>(
    await db.execute(probeStatement),
  )
  if (!row || row.unresolved > 0) return undefined
  return { position: BigInt(row.position), newestWriter: BigInt(row.newest) }
}

export type SettledRead<Row> = { rows: Row[]; settled: bigint }

// What a reader takes of each event: `row`, a JSON value over the events table (and `joins`,
// joined to it), parsed as one text; only the events for which `keep` holds.
export type EventShape = { row: SQL; joins?: SQL; keep?: SQL }

// Reads up to `batchSize` events after `after` and at or below the settled horizon, in position
// order, each as the shape makes it, and that horizon: `settled`, or the highest of `horizons`
// that has settled in the statement's snapshot. Everything at or below the returned horizon is
// final.
export type SettledReader<Row> = (
  db: Executor,
  after: bigint,
  settled: bigint,
  horizons: Horizon[],
  batchSize: number,
) => Promise<SettledRead<Row>>

// A reader of the settled log for one shape, as a statement prepared once per connection under
// `name`: planned anew at every read, the statement (the key's probe and the event's opening
// inlined in it) cost more to plan, ~1 ms, than to run.
export function settledReader<Row>(
  name: string,
  shape: EventShape,
  parse: (text: string) => unknown = JSON.parse,
): SettledReader<Row> {
  const statement = preparedQuery((db) => {
    const read = db
      .$with('settled_read', {
        settled: sql<string>`settled`.as('settled'),
        rows: sql<string>`rows`.as('rows'),
      })
      .as(sql`
        with bound as (select greatest(${sql.placeholder('settled')}::bigint, (
          select max(h.position)
          from unnest(${sql.placeholder('positions')}::bigint[], ${sql.placeholder('writers')}::bigint[]) as h(position, writer)
          where h.writer < pg_snapshot_xmin(pg_current_snapshot())::text::bigint)) as position),
        found as (select ${events.position} as position, ${shape.row} as row
                  from ${events} ${shape.joins ?? sql``}
                  where ${events.position} > ${sql.placeholder('after')}::bigint
                    and ${events.position} <= (select position from bound)
                    ${shape.keep ? sql`and (${shape.keep})` : sql``}
                  order by ${events.position} limit ${sql.placeholder('limit')}::int)
        select (select position::text from bound) as settled,
               (select coalesce(json_agg(found.row order by found.position), '[]')::text from found) as rows`)
    return db.with(read).select().from(read).prepare(name)
  })
  return async (db, after, settled, horizons, batchSize) => {
    const [row] = await statement(db).execute({
      settled: settled.toString(),
      positions: `{${horizons.map((horizon) => horizon.position).join(',')}}`,
      writers: `{${horizons.map((horizon) => horizon.newestWriter).join(',')}}`,
      after: after.toString(),
      limit: batchSize,
    })
    return { rows: parse(row?.rows ?? '[]') as Row[], settled: BigInt(row?.settled ?? settled) }
  }
}

// The horizon alone: no event is taken.
const readHorizon = settledReader<never>('read_settled_horizon', { row: sql`null` })

// Waits until the log is settled up to a position at least as high as the last one handed out
// now, and returns that position: every event up to it is final.
export async function settleNow(
  db: Executor,
  { retryMs = 20, signal }: { retryMs?: number; signal?: AbortSignal } = {},
): Promise<bigint> {
  for (;;) {
    const horizon = await probeHorizon(db)
    if (horizon) {
      const { settled } = await readHorizon(db, horizon.position, 0n, [horizon], 0)
      if (settled >= horizon.position) return settled
    }
    signal?.throwIfAborted()
    await new Promise((resolve) => setTimeout(resolve, retryMs))
  }
}
