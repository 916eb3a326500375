import type { Database } from '../../src/database/database.ts'
import { exportEvents } from '../../src/transfer/export-events.ts'

// A store's export as one text, read three events at a time so that a few already take several
// pages; from the position after `afterPosition` when given.
export async function exportText(db: Database, afterPosition?: bigint): Promise<string> {
  let text = ''
  await exportEvents(
    db,
    async (chunk) => {
      text += chunk
    },
    { afterPosition, batchSize: 3 },
  )
  return text
}
