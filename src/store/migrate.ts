import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import type { KeyEncryptionKeys } from '../keys/key-encryption-keys.ts'
import { createKeyring, type Keyring } from '../keys/keyring.ts'
import { unreachableDatabase } from '../shared/database-error.ts'
import { Failure } from '../shared/errors.ts'
import { within } from '../shared/time-limit.ts'
import type { Database } from './database.ts'
import { postgresClient } from './postgres-client.ts'

export const migrationsFolder = fileURLToPath(new URL('../../db/migrations', import.meta.url))
// Any constant shared by every instance of the service; 'plantmig' in ASCII.
const MIGRATION_LOCK = 0x706c616e746d6967n

const CONNECT_TIMEOUT_SECONDS = 10
// The first statement's answer, connection included: a server that lets the connection through and
// then goes silent (a proxy or a network that stopped forwarding) would otherwise hold the start
// until TCP gives up, many minutes on. Bounded so that the start stops well within 30 s.
const FIRST_ANSWER_SECONDS = 15
const LOCK_POLL_MS = 100

// Several instances starting together must not run the migrator at once (it collides on its own
// bookkeeping table), so each first takes an advisory lock in a transaction held open on a
// connection of its own: it pins its server connection through any pooler (PgBouncer in
// transaction mode included), and ends with it, by a crash too. This is the first connection a
// start makes: a database that cannot be used fails it as DatabaseUnreachable, one line naming
// DATABASE_URL (docs/configuration.md). The migrations, then `then`, run on a second connection,
// still under the lock and outside any transaction of the lock's (event-log/upgrade.ts).
// The lock is tried, not waited for in one statement: a statement that waits holds a snapshot, and
// the upgrade's VACUUM FULL would keep every row version it sealed for the instances waiting. The
// transaction that holds it is READ COMMITTED, so idle in it holds no snapshot either.
export async function migratePostgresDatabase(
  url: string,
  then: (db: Database, keyring: Keyring) => Promise<unknown> = async () => {},
  keys?: KeyEncryptionKeys,
): Promise<void> {
  const options = { max: 1, onnotice: () => {}, connect_timeout: CONNECT_TIMEOUT_SECONDS }
  const lock = postgresClient(url, options)
  const tryLock = async () => {
    await lock`begin isolation level read committed`
    const [row] = await lock`select pg_try_advisory_xact_lock(${MIGRATION_LOCK.toString()}::bigint) as locked`
    if (row?.locked !== true) {
      await lock`rollback`
      return false
    }
    // Last in the transaction: it also closes the select's portal, which held its snapshot. And a
    // DBA's idle_in_transaction_session_timeout would end the lock while the migrations run.
    await lock`set local idle_in_transaction_session_timeout = 0`
    return true
  }
  const first = await within(tryLock(), FIRST_ANSWER_SECONDS * 1000).catch(async (error: unknown) => {
    await lock.end({ timeout: 5 })
    throw unreachableDatabase(error, CONNECT_TIMEOUT_SECONDS) ?? error
  })
  // A connection that never answered is left to the process's exit: ending it would reject
  // postgres.js's own read of the array types, which nothing can catch, with a stack on stderr.
  if (first === undefined)
    throw new Failure(
      'DATABASE_UNREACHABLE',
      `DATABASE_URL: cannot use the database: no answer within ${FIRST_ANSWER_SECONDS} s (${serverOf(url)})`,
    )
  let locked = first
  const client = postgresClient(url, options)
  try {
    while (!locked) {
      await sleep(LOCK_POLL_MS)
      locked = await tryLock()
    }
    const db = drizzlePostgres({ client })
    await migratePostgres(db, { migrationsFolder })
    await then(db, createKeyring(keys ?? []))
  } finally {
    // Not left to the connection's end: PgBouncer closes a server connection left mid-transaction.
    if (locked) await lock`commit`.catch(() => {})
    await Promise.all([client.end({ timeout: 5 }), lock.end({ timeout: 5 })])
  }
}

// Where the URL leads, without its user or password: the hosts and ports, or the socket's folder.
function serverOf(url: string): string {
  const socket = new URLSearchParams(url.split('?')[1] ?? '').get('host')
  return socket ?? url.replace(/^[^:]+:\/\/([^@/?]*@)?/, '').split(/[/?]/)[0] ?? ''
}
