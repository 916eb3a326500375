import { sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import { type Database, rowsOf } from '../database/database.ts'
import { events } from '../event-log/schema.ts'
import { rewriteBehindFence, type UpgradeOptions } from './fenced-rewrite.ts'
import { sealPlaintextBatch } from './seal-plaintext.ts'

// Seals the events an earlier version wrote in plaintext, once, in the service
// (seal-plaintext.ts): the only time the log is rewritten, behind the fence events_erasable
// (migration 0006: it already refuses the plaintext inserts of an earlier version still running).
// Returns whether there was anything to do.
export async function upgradeLog(
  db: Database,
  keyring: Keyring,
  options: UpgradeOptions = {},
): Promise<boolean> {
  let after = 0n
  return rewriteBehindFence(
    db,
    {
      table: events,
      constraint: 'events_erasable',
      count: countPlaintext,
      batch: async (db, size) => {
        const batch = await sealPlaintextBatch(db, keyring, after, size)
        if (batch === undefined) return 0
        after = batch.last
        return batch.sealed
      },
      steps: {
        batch: 'seal',
        wait: 'wait',
        held: 'held',
        vacuum: 'vacuum',
        analyze: 'analyze',
        validate: 'validate',
        done: 'done',
      },
    },
    options,
  )
}

// A table whose file is empty never held a row (nor its indexes an entry).
async function countPlaintext(db: Database): Promise<{ total: number; quiet: boolean }> {
  const [row] = rowsOf<{ total: number; quiet: boolean }>(
    await db.execute(sql`select count(*) filter (where not (${events.metadata} ? 'pseudonym'))::int as total,
      pg_relation_size('events') = 0 as quiet from ${events}`),
  )
  return { total: row?.total ?? 0, quiet: row?.quiet ?? true }
}
