import { sql } from 'drizzle-orm'
import type { Keyring } from '../../src/crypto/keyring.ts'
import { type Database, rowsOf } from '../../src/database/database.ts'
import { openedLog } from './opened-log.ts'

export type ProjectionReport = { events: number; plants: number; mismatches: number }

// The projection compared with the fold of the log, opened in the test: every PlantCreated event of
// an owner that can be read must have exactly its row in `plants` (owner, id, name, tag, position),
// and no row may lack its event.
export async function checkProjection(db: Database, keyring: Keyring): Promise<ProjectionReport> {
  const log = await openedLog(db, keyring)
  const expected = new Map<string, string>()
  for (const event of log) {
    if (event.type !== 'PlantCreated' || event.owner === null || event.erasing || event.data === null)
      continue
    const { id, name, tag } = event.data
    expected.set(JSON.stringify([event.owner, id]), JSON.stringify([name, tag, event.position.toString()]))
  }
  const plants = rowsOf<{ owner: string; id: string; name: string; tag: string | null; position: string }>(
    await db.execute(sql`select owner, id::text as id, name, tag, position::text as position from plants`),
  )
  let mismatches = 0
  for (const row of plants) {
    const key = JSON.stringify([row.owner, row.id])
    if (expected.get(key) !== JSON.stringify([row.name, row.tag, row.position])) mismatches++
    expected.delete(key)
  }
  return { events: log.length, plants: plants.length, mismatches: mismatches + expected.size }
}
