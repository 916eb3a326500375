import { type SQL, sql } from 'drizzle-orm'
import { type PlantsTable, plants } from '../store/schema.ts'

// The projection: the `plants` row each event makes, as SQL over rows shaped like the events
// table, so that PostgreSQL applies it where the events are. What each stored shape of an event
// means is defined once, by the database function plant_store_event (migration 0004). The live
// path runs this on the rows its append statement has just stored (create-plant.ts), a rebuild on
// batches of the log and a verification on the whole log (replay/): the events never travel to
// this process and back.
export function projectInto(table: PlantsTable = plants) {
  return (events: SQL): SQL => sql`
    insert into ${table} (owner, id, name, tag, position)
    select e.metadata->>'owner', plant.id, plant.name, plant.tag, e.position
    from ${events} as e, plant_store_event(e.type, e.schema_version, e.data, e.position) as plant`
}

// Whether the event at `event` (a row of the events table) has its row in `plants`.
export function isProjected(event: SQL): SQL {
  return sql`exists (select 1 from ${plants} as p
                     where p.owner = ${event}.metadata->>'owner' and p.position = ${event}.position)`
}
