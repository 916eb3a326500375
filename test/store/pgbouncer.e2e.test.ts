import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import {
  EARLIER_STORES,
  listed,
  postExactly,
  restoreEarlierPostgres,
} from '../keys/fixtures/earlier-stores.ts'
import { expectCliSucceeded } from '../support/cli-assertions.ts'
import { type PgBouncer, startPgBouncer } from '../support/pgbouncer.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { changesRequest, openSse, plantOf } from '../support/sse-client.ts'

// The service and its CLI behind PgBouncer in transaction mode, as docs/operating.md sets it up
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

// The database's own settings, as docs/operating.md sets them for a pooler that drops the startup
// parameters the service asks for (10 s: the service's default statement timeout), then PgBouncer's
// server connections made anew, as its RECONNECT does, so that they take them.
async function setDatabaseSettings(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const database = new URL(url).pathname.slice(1)
  await sql.unsafe(`alter database "${database}" set statement_timeout = '10s'`)
  await sql.unsafe(`alter database "${database}" set plan_cache_mode = force_generic_plan`)
  await sql`select pg_terminate_backend(pid) from pg_stat_activity
    where datname = ${database} and pid <> pg_backend_pid()`
  await sql.end()
}

test('given a database without the settings the pooler drops, when an instance starts through PgBouncer, then it says so in one line naming them', async () => {
  // when
  const instance = await storage.startAnother()
  await instance.stop()
  // then
  const warnings = instance.startLines.filter((line) => line.includes('do not have the settings'))
  expect(warnings).toHaveLength(1)
  expect(warnings[0]).toContain('statement_timeout is 0 ms, not 10000')
  expect(warnings[0]).toContain('plan_cache_mode')
})

test('given an earlier store behind PgBouncer in transaction mode, when two instances create, list, stream and publish and the CLI verifies, rotates and erases, then all of it works', async () => {
  // given the database's settings as docs/operating.md gives them
  await setDatabaseSettings(String(storage.databaseUrl))
  const [first, second] = [await storage.startAnother(), await storage.startAnother()]
  if (!first || !second) throw new Error('no server')
  for (const instance of [first, second])
    expect(instance.startLines.filter((line) => line.includes('do not have the settings'))).toEqual([])
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
