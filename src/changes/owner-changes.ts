import { sql } from 'drizzle-orm'
import { type Executor, preparedStatement } from '../store/database.ts'
import { plants } from '../store/schema.ts'
import type { PlantChange } from './change-frame.ts'

type Row = { id: string; name: string; tag: string | null; position: string }

// Both are range scans of the projection's (owner, position) index; ids and positions travel as
// decimal text, exact whatever the driver does.
const changesAfter = preparedStatement<Row>(
  'owner_changes_after',
  sql`select ${plants.id}::text as id, ${plants.name} as name, ${plants.tag} as tag, ${plants.position}::text as position
      from ${plants}
      where ${plants.owner} = ${sql.placeholder('owner')} and ${plants.position} > ${sql.placeholder('after')}
      order by ${plants.position}
      limit ${sql.placeholder('count')}`,
)

const head = preparedStatement<{ position: string }>(
  'owner_head',
  sql`select coalesce(max(${plants.position}), 0)::text as position
      from ${plants} where ${plants.owner} = ${sql.placeholder('owner')}`,
)

// The owner's plants created after `after`, oldest first, at most `count`.
export async function readOwnerChanges(
  db: Executor,
  owner: string,
  after: bigint,
  count: number,
): Promise<PlantChange[]> {
  const rows = await changesAfter(db, { owner, after: after.toString(), count })
  return rows.map((row) => ({
    position: BigInt(row.position),
    id: BigInt(row.id),
    name: row.name,
    tag: row.tag,
  }))
}

// The position of the owner's latest plant (0 when none).
export async function readOwnerHead(db: Executor, owner: string): Promise<bigint> {
  const [row] = await head(db, { owner })
  return BigInt(row?.position ?? '0')
}
