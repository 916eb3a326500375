import { type SQL, sql } from 'drizzle-orm'
import { currentPseudonym } from '../event-log/pseudonyms.ts'
import { events, ownerGenerations, plants } from '../event-log/schema.ts'

// The parts every listing statement shares, written once. Each is an index probe or a range scan
// of the (owner, position) index whatever its parameters, so a statement built of them keeps one
// generic plan. Positions travel as decimal text, exact whatever the driver does.

// Whether the caller's event at a position is visible in the statement's snapshot: `seen`, not
// there yet (`absent`), or another owner's event (`other`).
export type Covered = 'seen' | 'absent' | 'other'

// The owner's head: the position of their latest plant, 0 when none.
export function ownerHead(owner: SQL): SQL {
  return sql`(select coalesce(max(${plants.position}), 0) from ${plants} where ${plants.owner} = ${owner})::text`
}

// The owner's generation, which a rebuild that changed their rows bumps (etag.ts).
export function ownerGeneration(owner: SQL): SQL {
  return sql`coalesce((select ${ownerGenerations.generation} from ${ownerGenerations}
                       where ${ownerGenerations.owner} = ${owner}), 0)::text`
}

// Read-your-writes (docs/operating.md, Scaling out): a probe of the events' primary key at
// `position`, and of whose event it is; position 0 asks for nothing and reads nothing.
export function coveringEvent(owner: SQL, position: SQL): SQL {
  return sql`case when ${position} = 0 then 'seen'
                  else coalesce((select case when ${events.metadata}->>'pseudonym' = ${currentPseudonym(owner)} then 'seen' else 'other' end
                                 from ${events} where ${events.position} = ${position}), 'absent') end`
}

// The owner's plants from position `from` on (and before `until`), oldest first: what follows a
// select list of `plantColumns` and comes before its limit. Written out in each statement's one
// query level, so that its plan is an index range scan with nothing between.
export function plantRange(owner: SQL, from: SQL, until?: SQL): SQL {
  return sql`from ${plants}
             where ${plants.owner} = ${owner} and ${plants.position} >= ${from}
               ${until === undefined ? sql`` : sql`and ${plants.position} < ${until}`}
             order by ${plants.position}`
}

// Above every position: the end of a range that has none.
export const NO_END = 2n ** 63n - 1n

export const plantColumns = sql`${plants.name} as name, ${plants.tag} as tag, ${plants.position} as position`

// One plant's JSON text, written by PostgreSQL as JSON.stringify would write it (to_json escapes as
// it does): the service decodes one text per page and serialises nothing.
const plantJson = sql`'{"name":' || to_json(${plants.name})::text || coalesce(',"tag":' || to_json(${plants.tag})::text, '') || '}'`

// Up to `count` of the owner's plants from `from` on, as two arrays in position order: each one's
// JSON text (`pieces`) and its position (`positions`). The aggregates take the rows in the order
// the range scan gives them, with no sort: PostgreSQL keeps a sorted subquery's order into the
// aggregates of a level that joins nothing, as here.
export function plantArrays(owner: SQL, from: SQL, count: SQL): SQL {
  return sql`select array_agg(found.piece) as pieces, array_agg(found.position) as positions
             from (select ${plantJson} as piece, ${plants.position} as position
                   ${plantRange(owner, from)} limit ${count}) as found`
}

// A page's JSON text from the first `count` of `plantArrays`' pieces (its `found`).
export function pageJson(count: SQL): SQL {
  return sql`coalesce('[' || array_to_string(found.pieces[1 : ${count}], ',') || ']', '[]')`
}

export const versionColumns = {
  head: sql<string>`head`.as('head'),
  generation: sql<string>`generation`.as('generation'),
}
