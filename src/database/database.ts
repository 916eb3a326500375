import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import type { KeyEncryptionKeys } from '../crypto/key-encryption-keys.ts'
import { createKeyring, type Keyring } from '../crypto/keyring.ts'
import type { Failure } from '../shared/errors.ts'
import { postgresClient } from './postgres-client.ts'
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

// postgres.js answers with an array of rows; other drivers with a result that holds them.
export function rowsOf<Row>(result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}

export type DatabaseHandle = {
  db: Database
  // 'embedded': the PostgreSQL server the service runs itself, in DATA_DIR or a throwaway one.
  kind: 'postgres' | 'embedded'
  // How the database is reached, for the connections of their own that some parts open (the
  // feed's leadership lock), with the pool's settings.
  settings: PostgresSettings
  // The service's keys (crypto/keyring.ts): they never reach the database.
  keyring: Keyring
  // The embedded server's processes (the postmaster first), for a gauge of its memory.
  processIds?: () => Promise<number[]>
  // The DATA_DIR this process holds, having started its server (not a command beside a service).
  dataDir?: string
  // The store's own one line for an error that says its disk is full: on the embedded store of a
  // DATA_DIR, naming it (data-dir/data-dir.ts); undefined for any other error.
  fullDisk?: (error: unknown) => Failure | undefined
  // Resolves with what happened if that server ends while the handle is open.
  lost?: Promise<string | undefined>
  close: () => Promise<void>
}

export type PostgresSettings = {
  url: string
  poolSize: number
  statementTimeoutMs: number
  connectTimeoutSeconds?: number
  // The key-encryption keys this process unwraps owners' keys with; kept here, never sent.
  keys?: KeyEncryptionKeys
}

export function openPostgres({
  url,
  poolSize,
  statementTimeoutMs,
  connectTimeoutSeconds = 5,
  keys,
}: PostgresSettings): DatabaseHandle {
  const primary = primaryHost(url)
  const client = postgresClient(url, {
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
      // plan them again on every execution, at a cost per page larger than the page itself
      // (docs/architecture.md, Design notes).
      plan_cache_mode: 'force_generic_plan',
    },
  })
  return {
    db: drizzlePostgres({ client }),
    kind: 'postgres',
    settings: { url, poolSize, statementTimeoutMs, connectTimeoutSeconds, keys },
    keyring: createKeyring(keys ?? []),
    close: async () => {
      await client.end({ timeout: 5 })
      await primary?.close()
    },
  }
}
