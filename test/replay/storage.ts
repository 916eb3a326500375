import { sql } from 'drizzle-orm'
import { createPlant } from '../../src/plants/create-plant.ts'
import { listPlants } from '../../src/plants/list-plants.ts'
import type { PlantView } from '../../src/plants/schemas.ts'
import { type Database, openEmbedded, openPostgres } from '../../src/store/database.ts'
import { migrateEmbeddedDatabase, migratePostgresDatabase } from '../../src/store/migrate.ts'
import { createTestDatabase } from '../support/postgres.ts'

export type StorageKind = 'postgres' | 'embedded'
export const STORAGE_KINDS: StorageKind[] = ['postgres', 'embedded']

export type TestStorage = { kind: StorageKind; db: Database; url?: string; close: () => Promise<void> }

// A migrated, empty store of either kind: a fresh PostgreSQL database or an in-memory PGlite.
export async function openTestStorage(kind: StorageKind): Promise<TestStorage> {
  if (kind === 'embedded') {
    const handle = await openEmbedded(undefined)
    await migrateEmbeddedDatabase(handle)
    return { kind, db: handle.db, close: handle.close }
  }
  const database = await createTestDatabase('replay')
  await migratePostgresDatabase(database.url)
  const handle = openPostgres({ url: database.url, poolSize: 10, statementTimeoutMs: 60_000 })
  const close = async () => {
    await handle.close()
    await database.drop()
  }
  return { kind, db: handle.db, url: database.url, close }
}

export function create(
  db: Database,
  owner: string,
  plant: { id: bigint; name: string; tag?: string | null },
) {
  const command = { owner, plant: { tag: null, ...plant }, now: new Date('2026-01-02T03:04:05.678Z') }
  return createPlant(db, { type: 'CreatePlant', ...command }, 'test-request')
}

export async function listing(db: Database, owner: string): Promise<PlantView[]> {
  const found = await listPlants(db, { owner })
  if (found.kind === 'page') return JSON.parse(found.body) as PlantView[]
  if (found.kind === 'unchanged') throw new Error('a listing without If-None-Match is never unchanged')
  const plants: PlantView[] = []
  for await (const batch of found.batches) plants.push(...batch)
  return plants
}

export async function rowsOf(db: Database, query: string): Promise<Record<string, unknown>[]> {
  const result = await db.execute(sql.raw(query))
  return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, unknown>[]
}

export async function count(db: Database, table: string): Promise<number> {
  const [row] = await rowsOf(db, `select count(*)::int as n from ${table}`)
  return Number(row?.n)
}
