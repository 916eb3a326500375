import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { advisoryLockLeadership, type Leadership } from '../../src/feed/leadership.ts'
import { takeErasureLock, takeRebuildLock } from '../../src/locks/maintenance-lock.ts'
import { claimWorkTable, listWorkTables } from '../../src/locks/work-tables.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { type PgBouncer, startPgBouncer } from '../support/pgbouncer.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// The three advisory locks (the migration's, the feed's leadership, the work tables' and the
// erasure-or-rebuild exclusion) through PgBouncer in transaction mode, where a session lock stays
// on whatever server connection ran its one statement, and with a DBA's idle-in-transaction timeout.

const LEADERSHIP_CLASS = 0x706c616e

// Advisory locks held by backends of the database that are not in a transaction: a lock left on a
// pooled server connection that no client uses.
async function idleHolders(admin: postgres.Sql): Promise<number> {
  const [row] = await admin<{ n: number }[]>`select count(*)::int as n
    from pg_locks l join pg_stat_activity a using (pid)
    where l.locktype = 'advisory' and a.state = 'idle' and a.datname = current_database()`
  return row?.n ?? -1
}

// Holders of an advisory lock, idle in their transaction, that keep a snapshot: each would hold
// back VACUUM, and the upgrade's wait for older snapshots, for as long as it holds the lock.
async function snapshotHolders(admin: postgres.Sql): Promise<number> {
  const [row] = await admin<{ n: number }[]>`select count(*)::int as n
    from pg_locks l join pg_stat_activity a using (pid)
    where l.locktype = 'advisory' and l.granted and a.state = 'idle in transaction'
      and a.backend_xmin is not null and a.datname = current_database()`
  return row?.n ?? -1
}

async function leadershipHolders(admin: postgres.Sql): Promise<number[]> {
  const rows = await admin<{ pid: number }[]>`select pid from pg_locks
    where locktype = 'advisory' and classid = ${LEADERSHIP_CLASS}::oid and granted
      and database = (select oid from pg_database where datname = current_database())`
  return rows.map((row) => row.pid)
}

async function eventually(what: string, check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await Bun.sleep(100)
  }
}

// Two migrations begun 100 ms apart, each with an upgrade that lasts 800 ms: the spans of their
// upgrades, in the order they ran.
async function overlappingMigrations(url: string): Promise<[number, number][]> {
  const spans: [number, number][] = []
  const upgrade = async () => {
    const start = Date.now()
    await Bun.sleep(800)
    spans.push([start, Date.now()])
  }
  const first = migratePostgresDatabase(url, upgrade, TEST_KEYS)
  await Bun.sleep(100)
  await Promise.all([first, migratePostgresDatabase(url, upgrade, TEST_KEYS)])
  return spans.sort(([a], [b]) => a - b)
}

describe('through PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer
  let database: TestDatabase
  let admin: postgres.Sql
  let url: string
  let handle: DatabaseHandle
  beforeAll(async () => {
    bouncer = await startPgBouncer()
    database = await createTestDatabase('pooled_locks')
    admin = postgres(database.url, { max: 1, onnotice: () => {} })
    await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
    url = `${bouncer.through(database.url)}?prepare=false`
    handle = openPostgres({ url, poolSize: 5, statementTimeoutMs: 30_000, keys: TEST_KEYS })
  })
  afterAll(async () => {
    await handle?.close()
    await admin?.end()
    await bouncer?.stop()
    await database?.drop()
  })

  test('given a database behind PgBouncer, when the service starts twice, then the migration lock keeps no snapshot and is left on no pooled connection', async () => {
    // when
    const whileLocked: number[] = []
    await migratePostgresDatabase(url, async () => whileLocked.push(await snapshotHolders(admin)), TEST_KEYS)
    // then
    expect(whileLocked).toEqual([0])
    expect(await idleHolders(admin)).toBe(0)
    // and a second start neither waits for a lock nobody holds nor leaves one
    const started = Date.now()
    await migratePostgresDatabase(url, undefined, TEST_KEYS)
    expect(Date.now() - started).toBeLessThan(5000)
    expect(await idleHolders(admin)).toBe(0)
  })

  test('given two instances starting together behind PgBouncer, when both migrate, then their upgrades run one after the other', async () => {
    // when
    const [first, second] = await overlappingMigrations(url)
    // then
    expect(second?.[0]).toBeGreaterThanOrEqual(first?.[1] ?? Number.POSITIVE_INFINITY)
    expect(await idleHolders(admin)).toBe(0)
  })

  test('given a rebuild holding its lock behind PgBouncer, when an erasure asks for its lock, then it waits, saying so, and gets it once the rebuild ends', async () => {
    // given
    const rebuild = await takeRebuildLock(handle.db)
    expect({ idle: await idleHolders(admin), snapshots: await snapshotHolders(admin) }).toEqual({
      idle: 0,
      snapshots: 0,
    })
    // when
    const told: string[] = []
    let erased = false
    const erasure = takeErasureLock(handle.db, { onWait: () => told.push('waits') }).then((held) => {
      erased = true
      return held?.release()
    })
    await Bun.sleep(500)
    // then
    expect({ told, erased }).toEqual({ told: ['waits'], erased: false })
    await rebuild.release()
    await erasure
    expect(erased).toBe(true)
    expect(await idleHolders(admin)).toBe(0)
  })

  test('given a work table claimed behind PgBouncer, then it is alive while claimed and dead once released', async () => {
    // given
    const claim = await claimWorkTable(handle.db, 'plants_rebuild_pooled')
    await admin`create table plants_rebuild_pooled (id int)`
    // then
    expect(await listWorkTables(handle.db)).toEqual([
      { name: 'plants_rebuild_pooled', bytes: 0, alive: true },
    ])
    expect({ idle: await idleHolders(admin), snapshots: await snapshotHolders(admin) }).toEqual({
      idle: 0,
      snapshots: 0,
    })
    // when
    await claim.release()
    // then
    expect(await listWorkTables(handle.db)).toEqual([
      { name: 'plants_rebuild_pooled', bytes: 0, alive: false },
    ])
    expect(await idleHolders(admin)).toBe(0)
  })

  test('given two instances asking for the feed leadership behind PgBouncer, then exactly one leads; when its server connection dies, the other leads and it knows it does not', async () => {
    const leaderships: Leadership[] = []
    try {
      // given
      const [first, second] = [0, 1].map(() => advisoryLockLeadership(url, 'pooled-feed')) as [
        Leadership,
        Leadership,
      ]
      leaderships.push(first, second)
      expect([await first.isLeader(), await second.isLeader()]).toEqual([true, false])
      expect([await first.isLeader(), await second.isLeader()]).toEqual([true, false])
      expect({ idle: await idleHolders(admin), snapshots: await snapshotHolders(admin) }).toEqual({
        idle: 0,
        snapshots: 0,
      })
      // when
      const [pid] = await leadershipHolders(admin)
      await admin`select pg_terminate_backend(${pid ?? 0})`
      // then
      // (within seconds: a question on a connection PgBouncer has just lost may fail first)
      await eventually('the other instance leads', () => second.isLeader(), 15_000)
      expect(await first.isLeader()).toBe(false)
      expect((await leadershipHolders(admin)).length).toBe(1)
      // and when the leader steps down, the first leads at its next questions, and only it
      await second.release()
      expect(await leadershipHolders(admin)).toEqual([])
      await eventually('the first leads again', () => first.isLeader(), 15_000)
      expect(await second.isLeader()).toBe(false)
      expect((await leadershipHolders(admin)).length).toBe(1)
    } finally {
      for (const leadership of leaderships) await leadership.close()
    }
    expect(await leadershipHolders(admin)).toEqual([])
    expect(await idleHolders(admin)).toBe(0)
  })

  test('given a leader in another process behind PgBouncer, when that process is killed, then another instance leads within seconds', async () => {
    // given
    const module = new URL('../../src/feed/leadership.ts', import.meta.url).pathname
    const script = `import { advisoryLockLeadership } from ${JSON.stringify(module)}
      console.log(await advisoryLockLeadership(process.env.LEADER_URL, 'killed-feed').isLeader())
      setInterval(() => {}, 1000)`
    const child = Bun.spawn([process.execPath, '-e', script], {
      env: { ...process.env, LEADER_URL: url },
      stdout: 'pipe',
      stderr: 'inherit',
    })
    const other = advisoryLockLeadership(url, 'killed-feed')
    try {
      const reader = child.stdout.getReader()
      const { value } = await reader.read()
      expect(new TextDecoder().decode(value).trim()).toBe('true')
      expect(await other.isLeader()).toBe(false)
      // when
      child.kill('SIGKILL')
      await child.exited
      // then
      await eventually('the other instance leads', () => other.isLeader())
    } finally {
      child.kill('SIGKILL')
      await other.close()
    }
    expect(await idleHolders(admin)).toBe(0)
  })
})

describe("with a DBA's idle_in_transaction_session_timeout of 300 ms", () => {
  let database: TestDatabase
  let admin: postgres.Sql
  let handle: DatabaseHandle
  beforeAll(async () => {
    database = await createTestDatabase('idle_timeout_locks')
    await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
    admin = postgres(database.url, { max: 1, onnotice: () => {} })
    await admin.unsafe(`alter database "${database.name}" set idle_in_transaction_session_timeout = '300ms'`)
    handle = openPostgres({ url: database.url, poolSize: 5, statementTimeoutMs: 30_000, keys: TEST_KEYS })
  })
  afterAll(async () => {
    await handle?.close()
    await admin?.end()
    await database?.drop()
  })

  test('given a rebuild holding its lock for longer than the timeout, when an erasure asks for its lock, then it still waits', async () => {
    // given
    const rebuild = await takeRebuildLock(handle.db)
    await Bun.sleep(1000)
    expect(await snapshotHolders(admin)).toBe(0)
    // when
    const told: string[] = []
    const erasure = takeErasureLock(handle.db, { onWait: () => told.push('waits') })
    await Bun.sleep(300)
    // then
    expect(told).toEqual(['waits'])
    await rebuild.release()
    await (await erasure)?.release()
  })

  test('given two instances starting together, when the first upgrade outlasts the timeout, then the second still waits for it', async () => {
    // when
    const [first, second] = await overlappingMigrations(database.url)
    // then
    expect(second?.[0]).toBeGreaterThanOrEqual(first?.[1] ?? Number.POSITIVE_INFINITY)
  })

  test('given a leader idle past the timeout, then it still leads, on the same backend, holding no snapshot', async () => {
    const leadership = advisoryLockLeadership(database.url, 'idle-feed')
    try {
      // given
      expect(await leadership.isLeader()).toBe(true)
      const before = await leadershipHolders(admin)
      expect(before).toHaveLength(1)
      // when
      await Bun.sleep(1000)
      // then
      expect(await leadershipHolders(admin)).toEqual(before)
      expect(await leadership.isLeader()).toBe(true)
      expect(await leadershipHolders(admin)).toEqual(before)
      expect(await snapshotHolders(admin)).toBe(0)
    } finally {
      await leadership.close()
    }
    expect(await leadershipHolders(admin)).toEqual([])
  })
})
