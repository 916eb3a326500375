import { type SQL, sql } from 'drizzle-orm'
import type { Transaction } from './database.ts'

// Any constant shared by every instance of the service; 'plantapp' in ASCII.
const APPEND_LOCK = 0x706c616e74617070n

// Every transaction that appends events holds this lock, shared, before its events take their
// positions (create-plant.ts takes it inside its one statement), so appends never wait for each
// other on it. A projection swap takes it exclusively: once it has
// it, no append is in flight and every event in the table is committed.
export const appendLockShared: SQL = sql`pg_advisory_xact_lock_shared(${sql.raw(APPEND_LOCK.toString())}::bigint)`

export async function holdAppendLock(tx: Transaction): Promise<void> {
  await tx.execute(sql`select ${appendLockShared}`)
}

export async function blockAppends(tx: Transaction): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${APPEND_LOCK.toString()}::bigint)`)
}
