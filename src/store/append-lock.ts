import { sql } from 'drizzle-orm'
import type { Transaction } from './database.ts'
import { events } from './schema.ts'

// Every append holds the events table's ROW EXCLUSIVE lock, as any insert does, at no extra cost.
// A projection swap, or an import into an empty store, takes it EXCLUSIVE: once that is granted no
// append is in flight, none starts until the transaction ends, and every event in the table is
// committed. Readers carry on.
export async function blockAppends(tx: Transaction): Promise<void> {
  await tx.execute(sql`lock table ${events} in exclusive mode`)
}
