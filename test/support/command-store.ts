import postgres from 'postgres'
import { type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { upgradeLog } from '../../src/keys/log-upgrade.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createPlant } from '../../src/plants/create-plant.ts'
import { type ServiceStorage, startService } from './service.ts'
import { TEST_KEYS } from './test-keys.ts'

// A PostgreSQL store as the CLI's commands find it with no server beside them: migrated and its log
// upgraded; `sql` (of `connections` connections) reads and holds its rows behind the commands' backs.
export async function startCommandStore(
  label: string,
  connections: number,
): Promise<{ storage: ServiceStorage; sql: postgres.Sql }> {
  const storage = await startService({ label, instances: 0 })
  const url = String(storage.databaseUrl)
  await migratePostgresDatabase(url, (db, keyring) => upgradeLog(db, keyring), TEST_KEYS)
  return { storage, sql: postgres(url, { max: connections, onnotice: () => {} }) }
}

// The service's own handle on that store, for writing through its code (creates) as a server would.
export function openCommandStore(storage: ServiceStorage, poolSize: number): DatabaseHandle {
  return openPostgres({
    keys: TEST_KEYS,
    url: String(storage.databaseUrl),
    poolSize,
    statementTimeoutMs: 60_000,
  })
}

// A plant created through the service's code, its request id `<owner>-<id>`.
export function createOwnedPlant(handle: DatabaseHandle, owner: string, id: number, name: string) {
  return createPlant(
    handle.db,
    ownerKeyCache(handle.keyring),
    { type: 'CreatePlant', owner, plant: { id: BigInt(id), name, tag: null }, now: new Date() },
    `${owner}-${id}`,
  )
}

// The rows of `where` (a table and its condition), counted.
export async function countRows(sql: postgres.Sql, where: string): Promise<number> {
  return Number((await sql.unsafe(`select count(*)::int as n from ${where}`))[0]?.n)
}

// Polls `check` until it holds, failing after 30 s with `what` was not reached.
export async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached in 30 s: ${what}`)
    await Bun.sleep(20)
  }
}
