import { sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import type { Database, Transaction } from '../database/database.ts'
import { postgresErrorCode } from '../shared/database-error.ts'
import { Failure } from '../shared/errors.ts'

const LOCK_NOT_AVAILABLE = '55P03'

// Thrown by `work` to let creates through and be tried again (after `beforeRetry`).
export class GiveWay extends Error {
  override name = 'GiveWay'
}

export type BlockOptions = {
  // How long one attempt waits for a lock before giving way: creates queue behind a waiting
  // EXCLUSIVE request, so a long wait would stall them.
  waitMs?: number
  attempts?: number
  // Runs between attempts, outside any transaction (a rebuild catches up with the log there).
  beforeRetry?: () => Promise<void>
  // The lock taken first; by default the events table's EXCLUSIVE lock.
  lock?: (tx: Transaction) => Promise<void>
}

const blockAppends = (log: PgTable) => async (tx: Transaction) => {
  await tx.execute(sql`lock table ${log} in exclusive mode`)
}

// Runs `work` in a transaction that holds `log`, the events table (handed in: the locks sit below
// the log, whose append takes an owner's lock), EXCLUSIVE, unless `lock` says otherwise. Every
// append holds the table's ROW EXCLUSIVE lock, as any insert does, at no extra cost: once
// EXCLUSIVE is granted no append is in flight, none starts until the transaction ends, and every
// event in the table is committed. Readers carry on. Every lock the transaction waits for
// (this one, and whatever `work` takes, such as a projection swap's) is waited for at most
// `waitMs`; then the transaction gives way, and is tried again, so that creates never queue behind
// it for longer.
export async function whileAppendsBlocked<Result>(
  db: Database,
  log: PgTable,
  work: (tx: Transaction) => Promise<Result>,
  { waitMs = 200, attempts = 150, beforeRetry = async () => {}, lock = blockAppends(log) }: BlockOptions = {},
): Promise<Result> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(async (tx) => {
        await tx.execute(sql.raw(`set local lock_timeout = ${Math.round(waitMs)}`))
        await lock(tx)
        return work(tx)
      })
    } catch (error) {
      if (!(error instanceof GiveWay) && postgresErrorCode(error) !== LOCK_NOT_AVAILABLE) throw error
      if (attempt >= attempts) {
        throw new Failure(
          'LOG_BUSY',
          `the event log stayed busy through ${attempts} attempts to lock it; try again`,
        )
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(25 * attempt, 500)))
      await beforeRetry()
    }
  }
}
