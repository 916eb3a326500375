import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { takeLock } from '../../src/locks/advisory-lock.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { startPgBouncer } from '../support/pgbouncer.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const LOCK = { space: 42, name: 'fenced-test', what: 'the test' }

// The one way a lock is held (locks/advisory-lock.ts), its connection ended by a DBA mid-work.
describe('a lock whose connection is ended', () => {
  let database: TestDatabase
  let admin: postgres.Sql
  let handle: DatabaseHandle
  const endHolder = (space: number) =>
    admin`select pg_terminate_backend(pid) from pg_locks
      where locktype = 'advisory' and classid = ${space}::oid and granted
        and database = (select oid from pg_database where datname = current_database())`
  const settles = <T>(promise: Promise<T>, ms: number) =>
    Promise.race([
      promise.then(
        () => 'resolved',
        (error: unknown) => (error as { code?: string }).code ?? String(error),
      ),
      Bun.sleep(ms).then(() => 'pending'),
    ])
  beforeAll(async () => {
    database = await createTestDatabase('advisory_lock')
    await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
    admin = postgres(database.url, { max: 1, onnotice: () => {} })
    await admin`create table fenced_rows (n int)`
    handle = openPostgres({ url: database.url, poolSize: 3, statementTimeoutMs: 10_000, keys: TEST_KEYS })
  })
  afterAll(async () => {
    await handle?.close()
    await admin?.end()
    await database?.drop()
  })

  test('given a reserved connection in a transaction, when its backend is ended, then its commit and every later statement fail within seconds', async () => {
    // given
    const client = postgres(database.url, { max: 2, onnotice: () => {} })
    const reserved = await client.reserve()
    await reserved`begin`
    const [row] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`
    // when
    await admin`select pg_terminate_backend(${row?.pid ?? 0})`
    await Bun.sleep(200)
    // then
    expect(await settles(reserved`commit`, 5000)).toBe('CONNECTION_CLOSED')
    expect(await settles(reserved`select 1`, 5000)).toBe('CONNECTION_CLOSED')
    reserved.release()
    expect(await settles(client`select 1`, 5000)).toBe('resolved')
    await client.end()
  })

  test('given a lock with a write fenced by it, when its backend is ended, then prove and release fail as LOCK_LOST and the write is not committed', async () => {
    // given
    const held = await takeLock(handle.db, LOCK)
    if (!held) throw new Error('not taken')
    await held.fenced.transaction(async (tx) => {
      await tx.execute(sql`insert into fenced_rows values (1)`)
    })
    await held.prove()
    // when
    await endHolder(LOCK.space)
    // then
    expect(await settles(held.prove(), 5000)).toBe('LOCK_LOST')
    expect(await settles(held.release(), 5000)).toBe('LOCK_LOST')
    expect(await admin`select n from fenced_rows`).toHaveLength(0)
    // and the lock is free for the next run, which commits
    const next = await takeLock(handle.db, LOCK, { wait: false })
    await next?.fenced.transaction(async (tx) => {
      await tx.execute(sql`insert into fenced_rows values (2)`)
    })
    await next?.release()
    expect([...(await admin`select n from fenced_rows`)]).toEqual([{ n: 2 }])
  })

  test('given a lock another run holds, then a taker that may not wait gets none at once, and one that waits says so and takes it once it is free', async () => {
    // given
    const first = await takeLock(handle.db, LOCK)
    // when
    expect(await takeLock(handle.db, LOCK, { wait: false })).toBeUndefined()
    const told: string[] = []
    const second = takeLock(handle.db, LOCK, { onWait: () => told.push('waits') })
    await Bun.sleep(300)
    // then
    expect(told).toEqual(['waits'])
    await first?.release()
    await (await second)?.release()
  })

  test('given a start whose migration lock is ended during its upgrade, then it stops within seconds as LOCK_LOST', async () => {
    // when
    const started = migratePostgresDatabase(
      database.url,
      async () => {
        await endHolder(0x706c6d67)
      },
      TEST_KEYS,
    )
    // then
    expect(await settles(started, 10_000)).toBe('LOCK_LOST')
  })
  test('given a start through PgBouncer, when PgBouncer restarts during its upgrade, then it stops within seconds as LOCK_LOST', async () => {
    const bouncer = await startPgBouncer()
    try {
      // when
      const started = migratePostgresDatabase(
        `${bouncer.through(database.url)}?prepare=false`,
        () => bouncer.restart(),
        TEST_KEYS,
      )
      // then
      expect(await settles(started, 15_000)).toBe('LOCK_LOST')
    } finally {
      await bouncer.stop()
    }
  })
})
