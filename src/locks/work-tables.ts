import { sql } from 'drizzle-orm'
import { type Database, type Executor, rowsOf } from '../database/database.ts'
import { type HeldLock, type LockName, takeLock, withLock } from './advisory-lock.ts'
import { LOCKS } from './lock-registry.ts'
import { heldLockCondition, LOCK_SPACES } from './lock-spaces.ts'
import { IMPORTING } from './maintenance-lock.ts'

// Tables a command fills outside any one transaction: a rebuild's `plants_rebuild_*`, an import's
// `import_staging_*`. A command that dies leaves its table behind. Each live one holds an advisory
// lock named after its table for as long as it runs (claimWorkTable), so the next command can tell a dead
// run's table (no such lock: dropped) from a live one's (left alone; two rebuilds may run at once).
export const WORK_TABLE_PREFIXES = ['plants_rebuild_', 'import_staging_'] as const

export type WorkTable = { name: string; bytes: number; alive: boolean }

export function workTableName(prefix: (typeof WORK_TABLE_PREFIXES)[number]): string {
  return `${prefix}${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`
}

// Marks `name` as in use until the lock is released or lost (locks/advisory-lock.ts). Taken
// before the table is made, so no other command ever sees the table without the lock.
// An import's table is claimed with the import's share of the lock an erasure's last step takes
// alone (locks/maintenance-lock.ts), in the same transaction: held, and lost, with the table's.
export async function claimWorkTable(db: Database, name: string, consequence?: string): Promise<HeldLock> {
  return (await takeLock(db, workTableLock(name), claimOptions(name, consequence))) ?? claimedTwice(name)
}

// Runs `work` holding the claim on `name` (claimWorkTable), and releases it: what `work` wrote
// through `fenced` commits then.
export function withWorkTable<Result>(
  db: Database,
  name: string,
  consequence: string,
  work: (held: HeldLock) => Promise<Result>,
): Promise<Result> {
  const otherwise = () => claimedTwice(name)
  return withLock(db, workTableLock(name), { ...claimOptions(name, consequence), otherwise }, work)
}

const claimOptions = (name: string, consequence: string | undefined) =>
  ({
    consequence,
    wait: false,
    along: name.startsWith('import_staging_') ? IMPORTING : undefined,
  }) as const

const workTableLock = (name: string): LockName => ({
  space: LOCK_SPACES[LOCKS.workTable.space],
  name,
  what: `the work table ${name}`,
})

// A name made at random, taken already: a bug, not a state.
function claimedTwice(name: string): never {
  throw new Error(`work table ${name} claimed twice`)
}

// Every work table in the schema, with its size and whether a live command holds it.
export async function listWorkTables(db: Executor): Promise<WorkTable[]> {
  const rows = rowsOf<{ name: string; bytes: string; alive: boolean }>(
    await db.execute(sql`
      select c.relname as name, pg_total_relation_size(c.oid)::text as bytes,
             exists (select 1 from pg_locks l
                     where ${sql.raw(heldLockCondition(LOCK_SPACES[LOCKS.workTable.space], 'c.relname'))}) as alive
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
