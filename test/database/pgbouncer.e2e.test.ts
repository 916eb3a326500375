import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { openPostgres, rowsOf } from '../../src/database/database.ts'
import { postgresErrorCode } from '../../src/shared/database-error.ts'
import {
  EARLIER_STORES,
  listed,
  postExactly,
  restoreEarlierPostgres,
} from '../keys/fixtures/earlier-stores.ts'
import { expectCliSucceeded } from '../support/cli-assertions.ts'
import { type PgBouncer, startPgBouncer } from '../support/pgbouncer.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { runCli, runServerToExit } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { changesRequest, openSse, plantOf } from '../support/sse-client.ts'

// The service and its CLI behind PgBouncer 1.18 in transaction mode as operators run it
// (`ignore_startup_parameters = extra_float_digits` alone), as docs/operating.md sets it up
// (`prepare=false` in DATABASE_URL): two instances, an earlier store, the feed on.

let bouncer: PgBouncer
let storage: ServiceStorage
beforeAll(async () => {
  bouncer = await startPgBouncer()
  storage = await startService({
    label: 'pgbouncer',
    instances: 0,
    feed: true,
    databaseUrl: (url) => `${bouncer.through(url)}?prepare=false`,
  })
  restoreEarlierPostgres(String(storage.databaseUrl))
})
afterAll(async () => {
  await storage?.stop()
  await bouncer?.stop()
})

test('given PgBouncer taking no startup parameter but extra_float_digits, when a server and a command start without prepare=false, then each stops with one line naming DATABASE_URL, what was refused and the fix, and exits 2 (a setting to change)', async () => {
  // given
  const env = { ...storage.env, DATABASE_URL: bouncer.through(String(storage.databaseUrl)) }
  // when
  const server = await runServerToExit(env)
  const command = await runCli(['projection', 'verify'], env)
  // then
  for (const { stderr, exitCode } of [server, command]) {
    expect({ exitCode, stderr }).toMatchObject({ exitCode: 2 })
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stderr).toContain('DATABASE_URL')
    expect(stderr).toMatch(/unsupported startup parameter: (statement_timeout|plan_cache_mode)/)
    expect(stderr).toContain('add prepare=false to DATABASE_URL')
  }
})

test('given PgBouncer taking no startup parameter but extra_float_digits, when an instance starts with prepare=false, then it says in one warn line that it cancels statements itself', async () => {
  // when
  const instance = await storage.startAnother()
  await instance.stop()
  // then
  const warnings = instance.startLines.filter((line) => line.includes('cancels a statement itself'))
  expect(warnings).toHaveLength(1)
  expect(JSON.parse(warnings[0] ?? '{}')).toMatchObject({ level: 40, statementTimeoutMs: 10_000 })
  expect(instance.startLines.filter((line) => line.includes('do not have the settings'))).toEqual([])
})

test('given a pool through PgBouncer with a statement timeout of 500 ms, when statements run longer, alone or in a transaction, then the client cancels each and the pool goes on', async () => {
  // given
  const handle = openPostgres({ url: String(storage.env.DATABASE_URL), poolSize: 2, statementTimeoutMs: 500 })
  try {
    const started = performance.now()
    // when
    const alone = await handle.db.execute(sql`select pg_sleep(5)`).catch((error: unknown) => error)
    const inTransaction = await handle.db
      .transaction((tx) => tx.execute(sql`select pg_sleep(5)`))
      .catch((error: unknown) => error)
    // then: canceled as PostgreSQL's own timeout would be (57014), well before the sleeps end
    for (const error of [alone, inTransaction]) expect(postgresErrorCode(error)).toBe('57014')
    expect(performance.now() - started).toBeLessThan(8_000)
    const [row] = rowsOf<{ one: number }>(await handle.db.execute(sql`select 1 as one`))
    expect(row?.one).toBe(1)
  } finally {
    await handle.close()
  }
})

test('given an earlier store behind PgBouncer in transaction mode, when two instances create, list, stream and publish and the CLI verifies, rotates and erases, then all of it works', async () => {
  // given
  const [first, second] = [await storage.startAnother(), await storage.startAnother()]
  if (!first || !second) throw new Error('no server')
  const [old] = EARLIER_STORES.owners
  if (!old) throw new Error('the earlier store has no owner')
  const oldToken = await storage.tokenFor(old.sub)
  const newToken = await storage.tokenFor('nadia')
  // when: a stream on one instance, creates on both, many at once (many server connections)
  const stream = await openSse(changesRequest(second.url, newToken))
  const creates = Array.from({ length: 20 }, (_, i) =>
    postPlant((i % 2 === 0 ? first : second).url, newToken, { id: i, name: `bounced ${i}` }),
  )
  expect((await Promise.all(creates)).map((response) => response.status)).toEqual(creates.map(() => 200))
  expect((await postPlant(first.url, oldToken, { id: 100, name: 'after the change' })).status).toBe(200)
  // then: listings, the stream, retries and conflicts of old plants, the feed
  expect(await listEveryPlant(second.url, oldToken)).toEqual([
    ...old.plants.map(listed),
    { name: 'after the change' },
  ])
  expect((await listEveryPlant(first.url, newToken)).length).toBe(20)
  const streamed = (await stream.take(20, 15_000)).map((event) => plantOf(event).id)
  expect(streamed.sort()).toEqual(Array.from({ length: 20 }, (_, i) => String(i)).sort())
  await stream.close()
  const [oldPlant] = old.plants
  if (!oldPlant) throw new Error('the earlier owner has no plant')
  expect((await postExactly(first.url, oldToken, oldPlant)).status).toBe(200)
  expect((await postExactly(first.url, oldToken, { ...oldPlant, name: 'another' })).status).toBe(409)
  // the earlier store's live owners' events (nothing of the owner erased before the feed) and 21 new
  const published = EARLIER_STORES.owners.flatMap((owner) => owner.plants).length + 21
  const messages = await storage.feed?.waitFor(published, 30_000)
  expect(new Set(messages?.map((message) => message.headers['Nats-Msg-Id']?.[0])).size).toBe(published)
  // and the CLI through PgBouncer, beside the running instances
  for (const args of [
    ['projection', 'verify'],
    ['keys', 'rotate'],
    ['owners', 'erase', '--', old.sub],
  ]) {
    expectCliSucceeded(args, await storage.cli(args))
  }
  expect(await listEveryPlant(second.url, oldToken)).toEqual([])
  expect((await storage.cli(['projection', 'verify'])).exitCode).toBe(0)
  // and no lock outlives its work on a pooled server connection (only an open transaction holds one)
  const sql = postgres(String(storage.databaseUrl), { max: 1, onnotice: () => {} })
  const leftOver = await sql`select l.objid::text, a.application_name from pg_locks l
    join pg_stat_activity a using (pid) where l.locktype = 'advisory' and a.state = 'idle'`
  await sql.end()
  expect([...leftOver]).toEqual([])
})
