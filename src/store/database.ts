import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { lockDataDir } from './data-dir-lock.ts'
import { keepTextExact } from './exact-text.ts'
import { primaryHost } from './primary-host.ts'

export type Database = PgDatabase<PgQueryResultHKT>
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0]
// Reads run on either; writes always run inside a transaction.
export type Executor = Database | Transaction

// Drizzle hands postgres.js every statement unprepared unless it is named (`.prepare(name)`), and
// postgres.js then parses and describes it in one round trip and binds it in a second, every time.
// A named query is parsed once per connection and then costs one round trip. Drizzle also rebuilds
// a query's text on every call; a query built once per executor, with placeholders, skips that too.
// Raw SQL is prepared the same way: each part of it a common table expression (`db.$with(alias,
// columns).as(sql)`), selected from with `db.with(...)`.
export function preparedQuery<Query>(build: (db: Executor) => Query): (db: Executor) => Query {
  const built = new WeakMap<Executor, Query>()
  return (db) => {
    let query = built.get(db)
    if (query === undefined) {
      query = build(db)
      built.set(db, query)
    }
    return query
  }
}

// postgres.js answers with an array of rows, PGlite with a result that holds them.
export function rowsOf<Row>(result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}

export type DatabaseHandle = { db: Database; kind: 'postgres' | 'embedded'; close: () => Promise<void> }

export type PostgresSettings = {
  url: string
  poolSize: number
  statementTimeoutMs: number
  connectTimeoutSeconds?: number
}

export function openPostgres({
  url,
  poolSize,
  statementTimeoutMs,
  connectTimeoutSeconds = 5,
}: PostgresSettings): DatabaseHandle {
  const primary = primaryHost(url)
  const client = postgres(url, {
    ...primary?.options,
    max: poolSize,
    connect_timeout: connectTimeoutSeconds,
    // postgres.js backs off up to 20 s between reconnects after repeated failures, and queries
    // wait out that delay: after an outage requests would hang and recovery lag. Cap it at 1 s.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    idle_timeout: 60,
    onnotice: () => {},
    connection: {
      application_name: 'plant-store',
      statement_timeout: statementTimeoutMs,
      // Every statement here is prepared and driven by an index whatever its parameters, but the
      // planner, finding the custom plans of the page and batch statements cheaper on paper, would
      // plan them again on every execution: measured, that was 0.3 ms of PostgreSQL CPU per page
      // (GET limit=20: 2,221 → 5,785 req/s on `bun run bench`; creates gained too).
      plan_cache_mode: 'force_generic_plan',
    },
  })
  return {
    db: drizzlePostgres({ client }),
    kind: 'postgres',
    close: async () => {
      await client.end({ timeout: 5 })
      await primary?.close()
    },
  }
}

// What every embedded database is opened with, the memory template included: pgcrypto seals the
// log (migration 0006), and PGlite loads an extension only when told to at each open.
export const EMBEDDED_EXTENSIONS = { pgcrypto } satisfies PGliteOptions['extensions']

// A compiled module and a data directory to start from (see memory-template.ts).
export type EmbeddedStart = Pick<PGliteOptions, 'pgliteWasmModule' | 'fsBundle' | 'loadDataDir'>

// `dataDir` undefined means in memory (tests). A directory is locked so that a second process
// cannot open it too: two PGlite instances on one directory silently lose writes.
export async function openEmbedded(
  dataDir: string | undefined,
  start: EmbeddedStart = {},
): Promise<DatabaseHandle> {
  const unlock = dataDir ? await lockDataDir(dataDir) : async () => {}
  try {
    const client = keepTextExact(
      await PGlite.create({
        ...start,
        extensions: EMBEDDED_EXTENSIONS,
        dataDir: dataDir ? `${dataDir}/pgdata` : undefined,
      }),
    )
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
