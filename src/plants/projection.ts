import { getTableName, sql } from 'drizzle-orm'
import type { Executor } from '../store/database.ts'
import type { FoldableEvent } from '../store/event-store.ts'
import { type PlantsTable, plants, projectionCheckpoints } from '../store/schema.ts'
import { decodePlantEvent } from './plant-events.ts'

type PlantRow = PlantsTable['$inferInsert']

// The one place that turns events into plant rows: the live write path calls it with `plants`,
// a rebuild with the table it is filling, a verification with a scratch table. The table's
// checkpoint moves in the same transaction as its rows.
export async function projectEvents(
  tx: Executor,
  recorded: FoldableEvent[],
  table: PlantsTable = plants,
): Promise<void> {
  if (recorded.length === 0) return
  const rows = recorded.flatMap(toRows)
  if (rows.length > 0) await insertRows(tx, table, rows)
  const position = recorded.reduce(
    // biome-ignore lint/complexity/useMathMinMax: positions are bigints, which Math.max refuses
    (highest, event) => (event.position > highest ? event.position : highest),
    0n,
  )
  await tx
    .insert(projectionCheckpoints)
    .values({ projection: getTableName(table), position })
    .onConflictDoUpdate({
      target: projectionCheckpoints.projection,
      set: { position: sql`greatest(${projectionCheckpoints.position}, excluded.position)` },
    })
}

// The rows travel as one JSON parameter that PostgreSQL unpacks itself: a replay inserts tens of
// thousands of rows per statement, which as bind parameters would cost far more to build and send.
// Ids and positions go as decimal strings, so they stay exact. `json`, not `jsonb`: it is unpacked
// once, so building a jsonb value first only costs time (a third of a rebuild's inserts).
async function insertRows(tx: Executor, table: PlantsTable, rows: PlantRow[]): Promise<void> {
  const json = JSON.stringify(
    rows.map((row) => ({ ...row, id: row.id.toString(), position: row.position.toString() })),
  )
  await tx.execute(sql`
    insert into ${table} (owner, id, name, tag, position)
    select owner, id, name, tag, position
    from json_to_recordset(${json}::json) as rows(owner text, id bigint, name text, tag text, position bigint)`)
}

function toRows(recorded: FoldableEvent): PlantRow[] {
  const event = decodePlantEvent(recorded)
  switch (event.type) {
    case 'PlantCreated':
      return [{ owner: recorded.metadata.owner, ...event.data, position: recorded.position }]
  }
}
