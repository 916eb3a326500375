import { type SQL, sql } from 'drizzle-orm'
import { type PlantsTable, plants } from '../store/schema.ts'

// The projection, in one place: the `plants` row each event makes, written as SQL over rows shaped
// like the events table, so that PostgreSQL applies it where the events are. The live path runs it
// on the rows its append statement has just stored (create-plant.ts), a rebuild on batches of the
// log and a verification on the whole log (replay/): the events never travel to this process and
// back. Each stored shape of PlantCreated is read here as plant-events.ts reads it: v0 named the
// id `plantId` (a JSON number, whose text PostgreSQL keeps exactly) and the name `title`. Any other
// type or version stops the statement (migration 0003), as plant-events.ts refuses it.
export function projectInto(table: PlantsTable = plants) {
  return (events: SQL): SQL => sql`
    insert into ${table} (owner, id, name, tag, position)
    select e.metadata->>'owner',
           (case e.schema_version when 1 then e.data->>'id' when 0 then e.data->>'plantId' end)::bigint,
           case e.schema_version when 1 then e.data->>'name' when 0 then e.data->>'title' end,
           e.data->>'tag',
           e.position
    from ${events} as e
    where case when e.type = 'PlantCreated' and e.schema_version in (0, 1) then true
               else plant_store_refuse_event(e.type, e.schema_version, e.position) end`
}

// Whether the event at `event` (a row of the events table) has its row in `plants`.
export function isProjected(event: SQL): SQL {
  return sql`exists (select 1 from ${plants} as p
                     where p.owner = ${event}.metadata->>'owner' and p.position = ${event}.position)`
}
