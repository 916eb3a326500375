import { PGlite } from '@electric-sql/pglite'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { lockDataDir } from './data-dir-lock.ts'

export type Database = PgDatabase<PgQueryResultHKT>
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0]
// Reads run on either; writes always run inside a transaction.
export type Executor = Database | Transaction

export type DatabaseHandle = { db: Database; kind: 'postgres' | 'embedded'; close: () => Promise<void> }

export type PostgresSettings = { url: string; poolSize: number; statementTimeoutMs: number }

export function openPostgres({ url, poolSize, statementTimeoutMs }: PostgresSettings): DatabaseHandle {
  const client = postgres(url, {
    max: poolSize,
    connect_timeout: 5,
    // postgres.js backs off up to 20 s between reconnects after repeated failures, and queries
    // wait out that delay: after an outage requests would hang and recovery lag. Cap it at 1 s.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    idle_timeout: 60,
    onnotice: () => {},
    connection: { application_name: 'plant-store', statement_timeout: statementTimeoutMs },
  })
  return { db: drizzlePostgres({ client }), kind: 'postgres', close: () => client.end({ timeout: 5 }) }
}

// `dataDir` undefined means in memory (tests). A directory is locked so that a second process
// cannot open it too: two PGlite instances on one directory silently lose writes.
export async function openEmbedded(dataDir: string | undefined): Promise<DatabaseHandle> {
  const unlock = dataDir ? await lockDataDir(dataDir) : async () => {}
  try {
    const client = dataDir ? await PGlite.create(`${dataDir}/pgdata`) : await PGlite.create()
    return {
      db: drizzlePglite({ client }),
      kind: 'embedded',
      close: async () => {
        await client.close()
        await unlock()
      },
    }
  } catch (error) {
    await unlock()
    throw error
  }
}
