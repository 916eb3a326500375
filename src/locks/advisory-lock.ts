import { setTimeout as sleep } from 'node:timers/promises'
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import type postgres from 'postgres'
import { type Database, rowsOf } from '../database/database.ts'
import { databaseMessage, postgresErrorCode } from '../shared/database-error.ts'
import { Failure } from '../shared/errors.ts'
import type { LockMode } from './lock-registry.ts'
import { heldLockCondition, lockKeyText } from './lock-spaces.ts'

// The one way this service holds a lock (locks/lock-registry.ts names each): a PostgreSQL advisory lock
// taken in a transaction held open on a connection lent for it alone. An open transaction pins its
// server connection through any pooler (PgBouncer in transaction mode included), and a crash, a
// killed backend or a restarted pooler ends it: a lock can be lost while its holder runs on. So
// what is safe only under the lock is not trusted to it but fenced: written through `fenced`, in
// the lock's own transaction, it commits with the release or not at all.
export type LockName = {
  // The first key (locks/lock-spaces.ts); the second is hashtext(`name`).
  space: number
  name: string
  // For the message when the lock is lost: "the lock on <what> was lost".
  what: string
}

export type HeldLock = {
  // A database whose transactions run inside the lock's (each in a savepoint of it): what they
  // write commits when the lock is released, and never if the lock is lost first.
  fenced: PostgresJsDatabase
  // Resolves while the lock's backend holds it; throws LOCK_LOST otherwise.
  prove: () => Promise<void>
  // Commits the lock's transaction, and with it what `fenced` wrote; throws LOCK_LOST when that
  // cannot be done (the connection died: nothing of it was committed).
  release: () => Promise<void>
  // Rolls the lock's transaction back and lends its connection back; never throws.
  abandon: () => Promise<void>
}

export type LockOptions = {
  mode?: LockMode
  // Called once, when the lock must be waited for.
  onWait?: () => void
  // What a loss means to the holder, after "the lock on … was lost: ".
  consequence?: string
  pollMs?: number
  // A lock taken in the same transaction once this one is (waited for, whatever `wait` says), and
  // held, proved and lost with it.
  along?: { lock: LockName; mode: LockMode }
}

// Waited for as long as another run holds it: the lock always comes back.
export type WaitOptions = LockOptions & { wait?: true }
// Given up at once when another run holds it: only these come back without the lock.
export type TryOptions = LockOptions & { wait: false }
export type TakeOptions = WaitOptions | TryOptions

type Client = postgres.Sql

// Takes `lock`, runs `work` holding it and releases it: what `work` wrote through `fenced` commits
// then, or, the lock lost, not at all (LOCK_LOST). A failure of `work` abandons the lock.
export async function withLock<Result>(
  db: Database,
  lock: LockName,
  options: WaitOptions,
  work: (held: HeldLock) => Promise<Result>,
): Promise<Result>
// `wait: false`: when another run holds the lock, `otherwise` answers instead, without it.
export async function withLock<Result, Otherwise>(
  db: Database,
  lock: LockName,
  options: TakeOptions & { otherwise: () => Otherwise | Promise<Otherwise> },
  work: (held: HeldLock) => Promise<Result>,
): Promise<Result | Otherwise>
export async function withLock<Result, Otherwise>(
  db: Database,
  lock: LockName,
  options: WaitOptions | (TryOptions & { otherwise: () => Otherwise | Promise<Otherwise> }),
  work: (held: HeldLock) => Promise<Result>,
): Promise<Result | Otherwise> {
  if (options.wait !== false) return runHolding(await takeLock(db, lock, options), work)
  const held = await takeLock(db, lock, options)
  return held === undefined ? options.otherwise() : runHolding(held, work)
}

// Runs `work` holding the lock `held` already, and releases it (abandons it, should `work` fail).
export async function runHolding<Result>(
  held: HeldLock,
  work: (held: HeldLock) => Promise<Result>,
): Promise<Result> {
  try {
    const result = await work(held)
    await held.release()
    return result
  } catch (error) {
    // After a failed release too: it leaves the lock's connection to be lent back.
    await held.abandon()
    throw error
  }
}

// Takes the lock. It is tried, and tried again every `pollMs`, rather than waited for in one
// statement: a waiting statement holds a snapshot (it would hold back VACUUM, and an upgrade that
// waits for older snapshots would wait for its waiters) and meets any statement timeout.
export async function takeLock(db: Database, lock: LockName, options?: WaitOptions): Promise<HeldLock>
export async function takeLock(
  db: Database,
  lock: LockName,
  options: TakeOptions,
): Promise<HeldLock | undefined>
export async function takeLock(
  db: Database,
  lock: LockName,
  {
    mode = 'exclusive',
    wait = true,
    onWait,
    consequence = 'run it again',
    pollMs = 100,
    along,
  }: TakeOptions = {},
): Promise<HeldLock | undefined> {
  const client = (db as unknown as { $client: Client }).$client
  // Sent as text by the simple protocol (the name checked there): a portal of the extended one
  // would stay open until the next statement, holding its snapshot.
  const key = lockKeyText(lock.space, lock.name)
  const lost = (cause?: unknown) =>
    new Failure(
      'LOCK_LOST',
      `the lock on ${lock.what} was lost (${lossOf(cause)}): ${consequence}`,
      {},
      {
        cause,
      },
    )
  const connection = await client.reserve()
  const run = async <Row>(statement: string) => rowsOf<Row>(await connection.unsafe(statement))
  const abandon = async () => {
    await connection.unsafe('rollback').catch(() => {})
    connection.release()
  }
  try {
    await connection.unsafe('begin isolation level read committed')
    // A DBA's idle_in_transaction_session_timeout would end the lock while its holder works.
    await connection.unsafe('set local idle_in_transaction_session_timeout = 0')
    const tryTake = (key: string, mode: LockMode) => async () =>
      (await run<{ taken: boolean }>(`select pg_try_advisory_xact_lock${suffixOf(mode)}(${key}) as taken`))[0]
        ?.taken === true
    if (!(await tryUntilTaken(tryTake(key, mode), wait, onWait, pollMs))) {
      await abandon()
      return undefined
    }
    if (along) {
      const alongKey = lockKeyText(along.lock.space, along.lock.name)
      await tryUntilTaken(tryTake(alongKey, along.mode), true, undefined, pollMs)
    }
  } catch (error) {
    await abandon()
    throw error
  }
  const held = [lock, ...(along ? [along.lock] : [])]
    .map(({ space, name }) => `(${heldLockCondition(space, `'${name}'`)})`)
    .join(' or ')
  const prove = async () => {
    const [row] = await run<{ held: number }>(
      `select count(*)::int as held from pg_locks l where l.pid = pg_backend_pid() and (${held})`,
    ).catch((error: unknown) => {
      throw lost(error)
    })
    if (row?.held !== (along ? 2 : 1)) throw lost()
  }
  return {
    fenced: fencedDatabase(client, connection, prove),
    prove,
    release: async () => {
      const result = await connection.unsafe('commit').catch((error: unknown) => {
        throw lost(error)
      })
      connection.release()
      // A transaction that had failed ends in a rollback, which COMMIT reports without an error.
      if ((result as { command?: string }).command !== 'COMMIT') throw lost()
    },
    abandon,
  }
}

// What ended the lock, in a few words: the server's message, or that the connection closed.
function lossOf(cause: unknown): string {
  if (cause === undefined) return 'its transaction ended'
  return postgresErrorCode(cause) === undefined ? 'its connection closed' : databaseMessage(cause)
}

// Each transaction of the returned database is a savepoint of the lock's transaction, on its
// connection. One that fails because the lock is gone fails as LOCK_LOST.
function fencedDatabase(
  client: Client,
  connection: postgres.ReservedSql,
  prove: () => Promise<void>,
): PostgresJsDatabase {
  let savepoints = 0
  const fencedClient = {
    options: client.options,
    unsafe: connection.unsafe,
    begin: async <Result>(work: (client: unknown) => Promise<Result>): Promise<Result> => {
      const name = `fenced_${++savepoints}`
      try {
        await connection.unsafe(`savepoint ${name}`)
        const result = await work(fencedClient)
        await connection.unsafe(`release savepoint ${name}`)
        return result
      } catch (error) {
        await connection.unsafe(`rollback to savepoint ${name}`).catch(() => {})
        await prove()
        throw error
      }
    },
  }
  // drizzle drives a client through `unsafe` and `begin` and reads its `options`; a reserved
  // connection has no `begin` of its own, so this one opens a savepoint instead.
  return drizzle({ client: fencedClient as unknown as postgres.Sql })
}

const suffixOf = (mode: LockMode) => (mode === 'shared' ? '_shared' : '')

// Tries `take` until it succeeds, every `pollMs` (`onWait` told once, when the first try fails);
// false at once when it fails and `wait` is false.
async function tryUntilTaken(
  take: () => Promise<boolean>,
  wait: boolean,
  onWait: (() => void) | undefined,
  pollMs: number,
): Promise<boolean> {
  if (await take()) return true
  if (!wait) return false
  onWait?.()
  do await sleep(pollMs)
  while (!(await take()))
  return true
}
