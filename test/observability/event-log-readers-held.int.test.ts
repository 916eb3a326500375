import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { Registry } from 'prom-client'
import { runLogFollower } from '../../src/follower/follower.ts'
import { watchEventLogReadersHeld } from '../../src/observability/event-log-readers-held.ts'
import { createLogger, silentLogger } from '../../src/shared/logger.ts'
import { eventually } from '../replicas/replica-client.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { create, openTestStorage, type TestStorage } from '../support/storage.ts'

// A transaction left open in another database of the same server holds every reader of the log:
// the gauge says for how long, one warning names the session, and the readers catch up once it ends.
let storage: TestStorage
let other: TestDatabase
let otherClient: postgres.Sql

beforeAll(async () => {
  storage = await openTestStorage('postgres')
  other = await createTestDatabase('elsewhere')
  otherClient = postgres(other.url, { max: 1, onnotice: () => {} })
}, 30_000)
afterAll(async () => {
  await otherClient?.end()
  await other?.drop()
  await storage?.close()
}, 30_000)

test('a long transaction in another database: the gauge rises and one warning names it; the follower of the log is not held', async () => {
  const lines: string[] = []
  const logger = createLogger('info', { write: (line) => lines.push(line) })
  const registry = new Registry()
  const gauge = async () => {
    const text = await registry.metrics()
    return Number(/^plant_store_log_readers_held_seconds (\S+)$/m.exec(text)?.[1])
  }
  const watch = watchEventLogReadersHeld({
    db: storage.db,
    registry,
    logger,
    checkEveryMs: 100,
    warnAfterMs: 1000,
  })
  // given a reader of the log at its head
  const follower = runLogFollower({
    db: storage.db,
    keyring: storage.keyring,
    logger: silentLogger(),
    pollMs: 50,
  })
  const read: string[] = []
  follower.subscribe((events) => {
    for (const event of events) read.push((event.data as { name: string }).name)
  })
  await follower.ready()
  try {
    // when a transaction in another database takes an id and stays open
    const holder = await otherClient.reserve()
    await holder`begin`
    const [{ pid }] = (await holder`select pg_backend_pid() as pid, pg_current_xact_id()`) as unknown as [
      { pid: number },
    ]
    // and a plant is created here meanwhile
    await create(storage, 'owner', { id: 1n, name: 'held back' })
    // then the gauge rises (a rebuild's reader of the log is held: it reads below the oldest
    // transaction running anywhere), and one warning names the holder; the follower, whose horizon
    // comes from this database's writers of the log (event-log/horizon.ts), reads on
    await eventually('the gauge passes 1.5 s', async () => (await gauge()) > 1.5, 10_000)
    expect(read).toEqual(['held back'])
    await Bun.sleep(500)
    const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 40)
    expect(warnings).toHaveLength(1)
    expect(warnings[0].holder).toMatchObject({ pid, database: other.name, state: 'idle in transaction' })
    expect(warnings[0].holder.ageSeconds).toBeGreaterThan(1)
    // and it says the transaction is another database's, why it holds this service's readers
    // still, and what its owner or the operator can do
    expect(warnings[0].msg).toContain(`in another database of this PostgreSQL server (${other.name})`)
    expect(warnings[0].msg).toContain("transaction ids are the server's")
    expect(warnings[0].msg).toContain('its owner can end it')
    expect(warnings[0].msg).toContain('a PostgreSQL server of its own')
    // when it ends
    await holder`commit`
    holder.release()
    // then the gauge falls
    await eventually('the gauge falls', async () => (await gauge()) < 1, 5000)
    expect(read).toEqual(['held back'])
  } finally {
    watch.stop()
    await follower.stop()
  }
}, 30_000)
