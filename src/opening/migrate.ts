import { fileURLToPath } from 'node:url'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import type { KeyEncryptionKeys } from '../crypto/key-encryption-keys.ts'
import { createKeyring, type Keyring } from '../crypto/keyring.ts'
import type { Database } from '../database/database.ts'
import { postgresClient } from '../database/postgres-client.ts'
import { runHolding, takeLock, withLock } from '../locks/advisory-lock.ts'
import { LOCKS } from '../locks/lock-registry.ts'
import { LOCK_SPACES } from '../locks/lock-spaces.ts'
import { unreachableDatabase } from '../shared/database-error.ts'
import { Failure } from '../shared/errors.ts'
import { within } from '../shared/time-limit.ts'

export const migrationsFolder = fileURLToPath(new URL('../../db/migrations', import.meta.url))
const MIGRATION_LOCK = {
  space: LOCK_SPACES[LOCKS.migration.space],
  name: LOCKS.migration.name,
  what: 'the migration',
}

const CONNECT_TIMEOUT_SECONDS = 10
// The first statement's answer, connection included: a server that lets the connection through and
// then goes silent (a proxy or a network that stopped forwarding) would otherwise hold the start
// until TCP gives up, many minutes on. Bounded so that the start stops well within 30 s.
const FIRST_ANSWER_SECONDS = 15

// Several instances starting together must not run the migrator at once (it collides on its own
// bookkeeping table), so each first takes the migration lock (locks/advisory-lock.ts) on a
// connection of its own. This is the first connection a start makes: a database that cannot be
// used fails it as DatabaseUnreachable, one line naming DATABASE_URL (docs/configuration.md).
// The migrations are fenced: they run in the lock's transaction and commit with it, or, the lock
// lost, not at all. Then `then` runs on a second connection, outside any transaction (VACUUM
// cannot run in one: keys/log-upgrade.ts), under the lock taken again, which is proved at its end.
export async function migratePostgresDatabase(
  url: string,
  then: (db: Database, keyring: Keyring) => Promise<unknown> = async () => {},
  keys?: KeyEncryptionKeys,
): Promise<void> {
  const options = { max: 1, onnotice: () => {}, connect_timeout: CONNECT_TIMEOUT_SECONDS }
  const lock = postgresClient(url, options)
  const lockDb = drizzlePostgres({ client: lock })
  const holding = { consequence: 'the start stopped; start it again' }
  const first = await within(
    takeLock(lockDb, MIGRATION_LOCK, { ...holding, wait: false }).then((held) => ({ held })),
    FIRST_ANSWER_SECONDS * 1000,
  ).catch(async (error: unknown) => {
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
  const client = postgresClient(url, options)
  try {
    const held = first.held ?? (await takeLock(lockDb, MIGRATION_LOCK, holding))
    await runHolding(held, ({ fenced }) => migratePostgres(fenced, { migrationsFolder }))
    await withLock(lockDb, MIGRATION_LOCK, holding, () =>
      then(drizzlePostgres({ client }), createKeyring(keys ?? [])),
    )
  } finally {
    await Promise.all([client.end({ timeout: 5 }), lock.end({ timeout: 5 })])
  }
}

// Where the URL leads, without its user or password: the hosts and ports, or the socket's folder.
function serverOf(url: string): string {
  const socket = new URLSearchParams(url.split('?')[1] ?? '').get('host')
  return socket ?? url.replace(/^[^:]+:\/\/([^@/?]*@)?/, '').split(/[/?]/)[0] ?? ''
}
