import { sql } from 'drizzle-orm'
import type { Keyring } from '../../src/crypto/keyring.ts'
import { seal, streamIdOf } from '../../src/crypto/sealing.ts'
import { type Database, openPostgres } from '../../src/database/database.ts'
import { type AppendKey, ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { events, ownerKeys } from '../../src/event-log/schema.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { createPlant } from '../../src/plants/create-plant.ts'
import { listPlants } from '../../src/plants/listing.ts'
import type { PlantView } from '../../src/plants/schemas.ts'
import { openedLog } from './opened-log.ts'
import { createTestDatabase } from './postgres.ts'
import { TEST_KEYS } from './test-keys.ts'

export type StorageKind = 'postgres' | 'embedded'
export const STORAGE_KINDS: StorageKind[] = ['postgres', 'embedded']

export type TestStorage = {
  kind: StorageKind
  db: Database
  keyring: Keyring
  url?: string
  close: () => Promise<void>
}

// A store as the code that writes to it needs it: its database and the service's keys.
export type KeyedStore = { db: Database; keyring: Keyring }

export type TestStorageOptions = { label?: string; statementTimeoutMs?: number; poolSize?: number }

// A migrated, empty store of either kind: a fresh database on the test PostgreSQL, or a throwaway
// store on the embedded server (as users' test suites get one). The one way tests open a store
// in-process; createHarness (harness.ts) puts the app on top of it.
export async function openTestStorage(
  kind: StorageKind,
  { label = 'replay', statementTimeoutMs = 60_000, poolSize = 10 }: TestStorageOptions = {},
): Promise<TestStorage> {
  if (kind === 'embedded') {
    const handle = await openStorage({ kind: 'memory', keys: TEST_KEYS })
    return { kind, db: handle.db, keyring: handle.keyring, close: handle.close }
  }
  const database = await createTestDatabase(label)
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  const handle = openPostgres({ keys: TEST_KEYS, url: database.url, poolSize, statementTimeoutMs })
  const close = async () => {
    await handle.close()
    await database.drop()
  }
  return { kind, db: handle.db, keyring: handle.keyring, url: database.url, close }
}

export function create(
  { db, keyring }: KeyedStore,
  owner: string,
  plant: { id: bigint; name: string; tag?: string | null },
) {
  const command = { owner, plant: { tag: null, ...plant }, now: new Date('2026-01-02T03:04:05.678Z') }
  return createPlant(db, ownerKeyCache(keyring), { type: 'CreatePlant', ...command }, 'test-request')
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
// The events of `owner`'s live key, in position order, opened as the service opens them, beside
// the text of what is stored.
export async function eventsOfOwner({ db, keyring }: KeyedStore, owner: string) {
  return (await openedLog(db, keyring)).filter((event) => event.owner === owner && !event.erasing)
}

// Appends one event by hand, around the projection (as an interrupted import leaves one), in the
// log's erasable form: sealed under the owner's key, made if the owner has none.
export async function appendAround(
  { db, keyring }: KeyedStore,
  owner: string,
  event: { type?: string; schemaVersion?: number; data: Record<string, unknown> },
): Promise<bigint> {
  const { type = 'PlantCreated', schemaVersion = 1, data } = event
  const keys = ownerKeyCache(keyring)
  const key = (await keys.find(db, [owner])).get(owner) as AppendKey
  if (key.made) {
    await db.insert(ownerKeys).values({ pseudonym: key.pseudonym, owner, key: key.wrapped })
  }
  const streamId =
    type === 'PlantCreated' && typeof data.id === 'string'
      ? streamIdOf(data.id, keyring.open(key))
      : `other:${crypto.randomUUID()}`
  // Opened again after the insert: a raw key is not held across an await (crypto/keyring.ts).
  const raw = keyring.open(key)
  const [row] = await db
    .insert(events)
    .values({
      streamId,
      streamVersion: 1,
      type,
      schemaVersion,
      data: seal(JSON.stringify(data), raw, 'data', { streamId, streamVersion: 1 }),
      metadata: {
        pseudonym: key.pseudonym,
        ...seal('{"requestId":"by hand"}', raw, 'metadata', { streamId, streamVersion: 1 }),
      },
      recordedAt: new Date(),
    })
    .returning({ position: events.position })
  return row?.position ?? 0n
}
