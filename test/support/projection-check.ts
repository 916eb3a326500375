import { sql } from 'drizzle-orm'
import { type Database, rowsOf } from '../../src/store/database.ts'

export type ProjectionReport = { events: number; plants: number; mismatches: number }

// The projection compared with the fold of the log, in SQL: every PlantCreated event of an owner
// that can be read must have exactly its row in `plants` (owner, id, name, tag, position), opened
// with the owner's key, and no row may lack its event.
export async function checkProjection(db: Database): Promise<ProjectionReport> {
  const result = await db.execute(
    sql.raw(`
      select
        (select count(*)::int from events) as events,
        (select count(*)::int from plants) as plants,
        (select count(*)::int
           from (select e.position, k.owner, plant_store_open(e.data, k.key) as data
                 from events e join (select pseudonym, owner, erasing, plant_store_unwrap(key) as key from owner_keys) k
                   on k.pseudonym = e.metadata->>'pseudonym' and not k.erasing
                 where e.type = 'PlantCreated') e
           full outer join plants p
             on p.owner = e.owner and p.id = (e.data->>'id')::bigint
          where e.position is null or p.owner is null
             or p.name is distinct from e.data->>'name'
             or p.tag is distinct from e.data->>'tag'
             or p.position <> e.position) as mismatches`),
  )
  const rows = rowsOf<ProjectionReport>(result)
  const [report] = rows
  if (!report) throw new Error('the projection check returned no row')
  return report
}
