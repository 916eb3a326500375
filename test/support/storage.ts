import { sql } from 'drizzle-orm'
import { createPlant } from '../../src/plants/create-plant.ts'
import { listPlants } from '../../src/plants/listing.ts'
import type { PlantView } from '../../src/plants/schemas.ts'
import { openStorage } from '../../src/start/open-store.ts'
import { type Database, openPostgres } from '../../src/store/database.ts'
import { migratePostgresDatabase } from '../../src/store/migrate.ts'
import { createTestDatabase } from './postgres.ts'
import { TEST_KEYS } from './test-keys.ts'

export type StorageKind = 'postgres' | 'embedded'
export const STORAGE_KINDS: StorageKind[] = ['postgres', 'embedded']

export type TestStorage = { kind: StorageKind; db: Database; url?: string; close: () => Promise<void> }

export type TestStorageOptions = { label?: string; statementTimeoutMs?: number }

// A migrated, empty store of either kind: a fresh database on the test PostgreSQL, or a throwaway
// store on the embedded server (as users' test suites get one). The one way tests open a store
// in-process; createHarness (harness.ts) puts the app on top of it.
export async function openTestStorage(
  kind: StorageKind,
  { label = 'replay', statementTimeoutMs = 60_000 }: TestStorageOptions = {},
): Promise<TestStorage> {
  if (kind === 'embedded') {
    const handle = await openStorage({ kind: 'memory', keys: TEST_KEYS })
    return { kind, db: handle.db, close: handle.close }
  }
  const database = await createTestDatabase(label)
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  const handle = openPostgres({ keys: TEST_KEYS, url: database.url, poolSize: 10, statementTimeoutMs })
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

// The events of one owner as the log keeps them, each with its data opened with the owner's key
// (`opened`) and the owner's subject (`owner`): a relation for tests that look inside the log.
export function eventsOfOwner(owner: string): string {
  return `(select e.*, k.owner, plant_store_open(e.data, k.key) as opened,
                  plant_store_open(e.metadata, k.key) as opened_metadata
           from events e join (select pseudonym, owner, erasing, plant_store_unwrap(key) as key from owner_keys) k on k.pseudonym = e.metadata->>'pseudonym'
           where k.owner = ${quoted(owner)})`
}

function quoted(text: string): string {
  return `'${text.replaceAll("'", "''")}'`
}

// Appends one event by hand, around the projection (as an interrupted import leaves one), in the
// log's erasable form: sealed under the owner's key, made if the owner has none.
export async function appendAround(
  db: Database,
  owner: string,
  event: { type?: string; schemaVersion?: number; data: Record<string, unknown> },
): Promise<bigint> {
  const { type = 'PlantCreated', schemaVersion = 1, data } = event
  const [row] = await rowsOf(
    db,
    `with key as (
       insert into owner_keys (pseudonym, owner, key)
       values (encode(gen_random_bytes(16), 'hex'), ${quoted(owner)}, plant_store_wrap(gen_random_bytes(32)))
       on conflict (owner) where not erasing do update set owner = excluded.owner
       returning pseudonym, plant_store_unwrap(key) as key)
     insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
     select coalesce(plant_store_stream_id(${quoted(JSON.stringify(data))}::jsonb->>'id', key.key),
                     'other:' || gen_random_uuid()), 1, ${quoted(type)}, ${schemaVersion},
            jsonb_build_object('sealed', plant_store_seal(${quoted(JSON.stringify(data))}, key.key)),
            jsonb_build_object('pseudonym', key.pseudonym), now()
     from key returning position::text as position`,
  )
  return BigInt(String(row?.position))
}
