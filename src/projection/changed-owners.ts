import { sql } from 'drizzle-orm'
import { type Executor, rowsOf, type Transaction } from '../database/database.ts'
import type { LogCursor } from '../event-log/reading.ts'
import { events, ownerGenerations, ownerKeys, type PlantsTable, plants } from '../event-log/schema.ts'

// A rebuild keeps a listing's ETag when it writes an owner the same rows, and changes it when it
// does not (plants/etag.ts): the owners whose rows differ get their generation bumped at the swap.
// Comparing every row under the swap's lock would stall creates for as long as the comparison, so
// the whole tables are compared before the lock, and under it only the owners that differed then
// or that have events the comparison may not have seen (after `cursor`, where the rebuilt table
// stood before it): any other owner's rows have not changed on either side since.

// Owners whose rows differ between the live projection and `rebuilt`: a join of the two primary keys.
export async function ownersDiffering(db: Executor, rebuilt: PlantsTable): Promise<string[]> {
  const found = await db.execute(sql`
    select distinct coalesce(live.owner, rebuilt.owner) as owner
    from ${plants} as live full join ${rebuilt} as rebuilt on live.owner = rebuilt.owner and live.id = rebuilt.id
    where live.owner is null or rebuilt.owner is null
       or (live.name, live.tag, live.position) is distinct from (rebuilt.name, rebuilt.tag, rebuilt.position)`)
  return rowsOf<{ owner: string }>(found).map((row) => row.owner)
}

// Under the lock that blocks appends, with `rebuilt` complete: bumps the generation of each owner,
// among `candidates` and the owners of events after `cursor`, whose rows differ. Each owner is
// compared on the (owner, position) index of both tables.
export async function bumpChangedOwners(
  tx: Transaction,
  rebuilt: PlantsTable,
  candidates: string[],
  cursor: LogCursor,
): Promise<void> {
  const rowsOfOwner = (table: PlantsTable) =>
    sql`select id, name, tag, position from ${table} as t where t.owner = candidate.owner`
  await tx.execute(sql`
    insert into ${ownerGenerations} (owner, generation)
    select candidate.owner, 1
    from (select jsonb_array_elements_text(${JSON.stringify(candidates)}::jsonb) as owner
          union
          select k.owner from ${events} join ${ownerKeys} as k on k.pseudonym = ${events.metadata}->>'pseudonym'
          where (${events.transactionId}, ${events.position}) > (${cursor.transactionId.toString()}::xid8, ${cursor.position.toString()}::bigint)
         ) as candidate
    where exists (${rowsOfOwner(plants)} except ${rowsOfOwner(rebuilt)})
       or exists (${rowsOfOwner(rebuilt)} except ${rowsOfOwner(plants)})
    on conflict (owner) do update set generation = ${ownerGenerations.generation} + 1`)
}
