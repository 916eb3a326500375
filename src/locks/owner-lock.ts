import { type SQL, sql } from 'drizzle-orm'

// Each owner's lock: a one-key advisory lock of the transaction, hashtextextended(owner, 0), which
// orders one owner's appends so that their positions commit in order (event-log/append.ts). A new
// owner's create, an import's append (for the owners it brings) and an erasure's first step take it,
// always by this statement: one key each, in key order, so that two takers of several never
// deadlock. `owners`: a FROM item (with its WHERE) whose `owner` column names them. The statement
// answers one row, `locks`: how many were taken.
export function lockOwners(owners: SQL): SQL {
  return sql`select count(pg_advisory_xact_lock(key)) as locks
          from (select distinct hashtextextended(owner, 0) as key from ${owners} order by 1) as keys`
}

// The lock of one owner, as lockOwners takes it.
export function lockOwner(owner: string): SQL {
  return lockOwners(sql`(values (${owner}::text)) as given (owner)`)
}
