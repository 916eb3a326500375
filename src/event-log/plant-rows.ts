import { type SQL, sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import type { Executor } from '../database/database.ts'
import { liveKeys, pseudonymOf } from './pseudonyms.ts'
import { type FoldedEvent, type LogCursor, readLogBatch } from './reading.ts'
import { type PlantsTable, plants } from './schema.ts'
import type { UnfitEvent } from './sealed-parts.ts'

// The fold of the log into `plants` outside the live path: a rebuild, a verification, an import
// and the log's upgrade read the events opened in the service (reading.ts) and write their rows
// here, a batch in one statement. The live path writes the same rows in its append statement.

// A `plants` row: the owner's subject, the plant's id, name, tag and the event's position.
export type PlantRow = { owner: string; id: string; name: string; tag: string | null; position: string }

// The row each opened PlantCreated makes; other events make none. Data is in today's shape
// (`openedData`: an id as decimal text, a tag or null).
export function plantRowsOf(opened: FoldedEvent[]): PlantRow[] {
  const rows: PlantRow[] = []
  for (const event of opened) {
    const row = plantRowOf(event)
    if (row) rows.push(row)
  }
  return rows
}

export function plantRowOf(event: FoldedEvent): PlantRow | undefined {
  const owner = event.owner
  if (event.type !== 'PlantCreated' || owner === null) return undefined
  const { id, name, tag } = event.data as { id: string; name: string; tag: string | null }
  return { owner, id, name, tag, position: event.position.toString() }
}

// Writes `rows` into `table` in one statement: one JSON parameter, one insert. JSON keeps each
// value exact (ids beyond 2^53 travel as text) and costs PostgreSQL less than a parameter a value.
export async function writePlantRows(db: Executor, table: PlantsTable, rows: PlantRow[]): Promise<void> {
  if (rows.length === 0) return
  await db.execute(sql`
    insert into ${table} (owner, id, name, tag, position)
    select owner, id, name, tag, position
    from json_to_recordset(${JSON.stringify(rows)}::json)
      as r(owner text, id bigint, name text, tag text, position bigint)`)
}

export type FoldedBatch = { events: number; highest: bigint; cursor: LogCursor }

// How a fold reads the log (readLogBatch): `settled`, and `onUnfit`, each event that does not
// open or fit, which the fold passes by.
export type FoldOptions = { settled?: boolean; onUnfit?: (unfit: UnfitEvent) => void }

// Folds the next `batchSize` events of the log after `after` into `table`: `events` counts every
// event read, also those that make no row.
export async function foldLogBatch(
  db: Executor,
  keyring: Keyring,
  table: PlantsTable,
  after: LogCursor,
  batchSize: number,
  options: FoldOptions = {},
): Promise<FoldedBatch> {
  const batch = await readLogBatch(db, keyring, after, batchSize, options)
  await writePlantRows(db, table, plantRowsOf(batch.events))
  return { events: batch.read, highest: batch.highest, cursor: batch.cursor }
}

// Folds every event after `after` into `table`, batch by batch: the next batch is read while the
// rows of the last one are written, so the service's part and the database's overlap, and memory
// holds two batches whatever the log's size. Returns where it stopped and how many events it read.
export async function foldLog(
  db: Executor,
  keyring: Keyring,
  table: PlantsTable,
  after: LogCursor,
  batchSize: number,
  options: FoldOptions & { onBatch?: (batch: FoldedBatch) => void } = {},
): Promise<{ events: number; cursor: LogCursor }> {
  let events = 0
  let writing: Promise<void> = Promise.resolve()
  try {
    for (let cursor = after; ; ) {
      const batch = await readLogBatch(db, keyring, cursor, batchSize, options)
      await writing
      if (batch.read === 0) return { events, cursor }
      writing = writePlantRows(db, table, plantRowsOf(batch.events))
      // Awaited on the next turn; a failure meanwhile is not an unhandled one.
      writing.catch(() => {})
      events += batch.read
      cursor = batch.cursor
      options.onBatch?.({ events: batch.read, highest: batch.highest, cursor })
    }
  } finally {
    await writing.catch(() => {})
  }
}

// Whether the event at `event` (a row of the events table) has its row in `plants`, or makes none
// (its owner erased or being erased, or an event that describes no plant). No key is needed: a
// PlantCreated makes a row exactly while its owner's key is live.
export function isProjected(event: SQL): SQL {
  return sql`(${event}.type <> 'PlantCreated' or not exists (
      select 1 from ${liveKeys} as k where k.pseudonym = ${pseudonymOf(event)}) or exists (
      select 1 from ${plants} as p join ${liveKeys} as k on p.owner = k.owner
      where k.pseudonym = ${pseudonymOf(event)} and p.position = ${event}.position))`
}
