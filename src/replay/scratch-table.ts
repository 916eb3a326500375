import { sql } from 'drizzle-orm'
import type { Executor, Transaction } from '../store/database.ts'
import { type PlantsTable, plantsTable } from '../store/schema.ts'

// A table of the projection's shape under another name, filled while `plants` keeps serving and
// swapped in at the end. It gets its keys after the bulk fill (faster than maintaining them row by
// row) and, on the swap, the names the migrations gave `plants`, so the next migration or rebuild
// finds what it expects (test/replay/rebuild.int.test.ts compares the two).
export type ScratchTable = { name: string; table: PlantsTable }

export async function createScratchTable(db: Executor): Promise<ScratchTable> {
  const name = `plants_rebuild_${crypto.randomUUID().slice(0, 8)}`
  await db.execute(sql`create table ${sql.identifier(name)} (like plants including defaults)`)
  return { name, table: plantsTable(name) }
}

export async function indexScratchTable(db: Executor, { name }: ScratchTable): Promise<void> {
  await db.execute(
    sql`alter table ${sql.identifier(name)} add constraint ${sql.identifier(`${name}_owner_id_pk`)} primary key (owner, id)`,
  )
  await db.execute(
    sql`create index ${sql.identifier(`${name}_owner_position`)} on ${sql.identifier(name)} (owner, position)`,
  )
}

// Inside the transaction that holds the append lock: readers queue for the moment the DDL takes,
// then find the new table under the old name.
export async function swapIntoPlants(tx: Transaction, { name }: ScratchTable): Promise<void> {
  await tx.execute(sql`drop table plants`)
  await tx.execute(sql`alter table ${sql.identifier(name)} rename to plants`)
  await tx.execute(sql`alter index ${sql.identifier(`${name}_owner_id_pk`)} rename to plants_owner_id_pk`)
  await tx.execute(
    sql`alter index ${sql.identifier(`${name}_owner_position`)} rename to plants_owner_position`,
  )
}

export async function dropScratchTable(db: Executor, { name }: ScratchTable): Promise<void> {
  await db.execute(sql`drop table if exists ${sql.identifier(name)}`)
}
