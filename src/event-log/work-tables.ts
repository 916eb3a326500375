import { sql } from 'drizzle-orm'
import { type Database, type Executor, rowsOf } from '../store/database.ts'

// Tables a command fills outside any one transaction: a rebuild's `plants_rebuild_*`, an import's
// `import_staging_*`. A command that dies leaves its table behind. Each live one holds an advisory
// lock named after its table for as long as it runs (holdLock), so the next command can tell a dead
// run's table (no such lock: dropped) from a live one's (left alone; two rebuilds may run at once).
export const WORK_TABLE_PREFIXES = ['plants_rebuild_', 'import_staging_'] as const

// The first key of the two-key advisory lock ("PLST"); the second is the table name's hash.
const LOCK_SPACE = 1347638356

export type WorkTable = { name: string; bytes: number; alive: boolean }

export function workTableName(prefix: (typeof WORK_TABLE_PREFIXES)[number]): string {
  return `${prefix}${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`
}

type ReservedPostgres = {
  unsafe: (query: string, parameters?: unknown[]) => Promise<unknown>
  release: () => void
}
type Client = { reserve?: () => Promise<ReservedPostgres> }

// Marks `name` as in use until the returned function is called. Taken before the table is made, so
// no other command ever sees the table without the lock.
export function claimWorkTable(db: Database, name: string): Promise<() => Promise<void>> {
  return holdLock(db, name, 'exclusive')
}

// An advisory lock named `name`, held until the returned function is called. postgres.js lends a
// connection for it alone, where a transaction holds it: an open transaction pins its server
// connection through any pooler (PgBouncer in transaction mode included), and a crash ends it. READ
// COMMITTED and idle, it holds no snapshot, so it holds back no VACUUM. A client that reserves none
// (PGlite, which reads a data folder of the previous engine while it is moved) has one session,
// which lives exactly as long as the process, so there it is a session lock: a transaction held
// open would take in every other statement. `onWait` is called first when the lock is taken and
// must be waited for.
export async function holdLock(
  db: Database,
  name: string,
  mode: 'shared' | 'exclusive',
  onWait?: () => void,
): Promise<() => Promise<void>> {
  const suffix = mode === 'shared' ? '_shared' : ''
  const client = (db as unknown as { $client: Client }).$client
  if (client.reserve) {
    const connection = await client.reserve()
    const run = async (call: string) =>
      rowsOf<{ taken: boolean | null }>(
        await connection.unsafe(`select ${call}${suffix}($1, hashtext($2)) as taken`, [LOCK_SPACE, name]),
      )[0]?.taken
    const end = async (command: 'commit' | 'rollback') => {
      await connection.unsafe(command).catch(() => connection.unsafe('rollback').catch(() => {}))
      connection.release()
    }
    try {
      await connection.unsafe('begin isolation level read committed')
      if (!(await run('pg_try_advisory_xact_lock'))) {
        onWait?.()
        await run('pg_advisory_xact_lock')
      }
      // Last in the transaction: it also closes the select's portal, which held its snapshot. And a
      // DBA's idle_in_transaction_session_timeout would end the lock while the command runs.
      await connection.unsafe('set local idle_in_transaction_session_timeout = 0')
    } catch (error) {
      await end('rollback')
      throw error
    }
    return () => end('commit')
  }
  const run = async (call: string) =>
    rowsOf<{ taken: boolean | null }>(
      await db.execute(sql`select ${sql.raw(call + suffix)}(${LOCK_SPACE}, hashtext(${name})) as taken`),
    )[0]?.taken
  if (!(await run('pg_try_advisory_lock'))) {
    onWait?.()
    await run('pg_advisory_lock')
  }
  return async () => {
    await run('pg_advisory_unlock')
  }
}

// Every work table in the schema, with its size and whether a live command holds it.
export async function listWorkTables(db: Executor): Promise<WorkTable[]> {
  const rows = rowsOf<{ name: string; bytes: string; alive: boolean }>(
    await db.execute(sql`
      select c.relname as name, pg_total_relation_size(c.oid)::text as bytes,
             exists (select 1 from pg_locks l
                     where l.locktype = 'advisory' and l.classid = ${LOCK_SPACE}::oid
                       and l.objid = hashtext(c.relname)::oid and l.objsubid = 2 and l.granted) as alive
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind = 'r'
        and (c.relname like 'plants\_rebuild\_%' or c.relname like 'import\_staging\_%')
      order by c.relname`),
  )
  return rows.map((row) => ({ name: row.name, bytes: Number(row.bytes), alive: row.alive }))
}

// Drops the tables of commands that died; returns what it dropped.
export async function clearDeadWorkTables(db: Database): Promise<WorkTable[]> {
  const dead = (await listWorkTables(db)).filter((table) => !table.alive)
  for (const table of dead) await db.execute(sql`drop table if exists ${sql.identifier(table.name)}`)
  return dead
}
