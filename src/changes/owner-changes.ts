import { and, asc, eq, gt, lte, sql } from 'drizzle-orm'
import { type Executor, preparedQuery, rowsOf } from '../database/database.ts'
import { currentPseudonym } from '../event-log/pseudonyms.ts'
import { plants } from '../event-log/schema.ts'
import type { PlantChange } from './change-frame.ts'

// Both are range scans of the projection's (owner, position) index; ids and positions travel as
// decimal text, exact whatever the driver does.
const changesAfter = preparedQuery((db) =>
  db
    .select({
      id: sql<string>`${plants.id}::text`,
      name: plants.name,
      tag: plants.tag,
      position: sql<string>`${plants.position}::text`,
    })
    .from(plants)
    .where(
      and(
        eq(plants.owner, sql.placeholder('owner')),
        gt(plants.position, sql.placeholder('after')),
        lte(plants.position, sql.placeholder('upTo')),
      ),
    )
    .orderBy(asc(plants.position))
    .limit(sql.placeholder('count'))
    .prepare('owner_changes_after'),
)

const head = preparedQuery((db) =>
  db
    .select({ position: sql<string>`coalesce(max(${plants.position}), 0)::text` })
    .from(plants)
    .where(eq(plants.owner, sql.placeholder('owner')))
    .prepare('owner_head'),
)

// The owner's plants created after `after` and up to `upTo`, oldest first, at most `count`.
export async function readOwnerChanges(
  db: Executor,
  owner: string,
  after: bigint,
  upTo: bigint,
  count: number,
): Promise<PlantChange[]> {
  const rows = await changesAfter(db).execute({
    owner,
    after: after.toString(),
    upTo: upTo.toString(),
    count,
  })
  return rows.map((row) => ({
    position: BigInt(row.position),
    id: BigInt(row.id),
    name: row.name,
    tag: row.tag,
  }))
}

// The position of the owner's latest plant (0 when none).
export async function readOwnerHead(db: Executor, owner: string): Promise<bigint> {
  const [row] = await head(db).execute({ owner })
  return BigInt(row?.position ?? '0')
}

// The owner's pseudonym while they can be read (undefined: no key yet, or being erased): a stream
// remembers it, so that it ends on the owner's OwnerErased even when that names no one any more.
export async function readOwnerPseudonym(db: Executor, owner: string): Promise<string | undefined> {
  const [row] = rowsOf<{ pseudonym: string | null }>(
    await db.execute(sql`select ${currentPseudonym(sql`${owner}::text`)} as pseudonym`),
  )
  return row?.pseudonym ?? undefined
}
