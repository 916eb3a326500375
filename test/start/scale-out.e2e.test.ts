import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { openedLog } from '../support/opened-log.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const MIGRATIONS = (
  (await Bun.file(new URL('../../db/migrations/meta/_journal.json', import.meta.url)).json()) as {
    entries: unknown[]
  }
).entries
const OWNERS = ['ann', 'ben', 'cat']
const IDS = Array.from({ length: 12 }, (_, index) => index + 1)
// Each owner+id is posted this many times, spread over the instances, with two competing names.
const ATTEMPTS = 4

let service: Service
let databaseUrl: string
let servers: ServerProcess[] = []
const tokens = new Map<string, string>()

beforeAll(async () => {
  // All three start at once on an empty database: each applies the migrations at start.
  service = await startService({ label: 'scale', instances: 3, env: { DATABASE_POOL_SIZE: '4' } })
  databaseUrl = String(service.databaseUrl)
  servers = [...service.servers]
  for (const owner of OWNERS) tokens.set(owner, await service.tokenFor(owner, 600))
}, 30_000)
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop('SIGTERM')))
  await service?.stop()
})

test('three instances on one database append exactly one event per owner+id and list the same plants', async () => {
  // given three instances that started together on one fresh database
  expect(servers).toHaveLength(3)
  // when concurrent creations with overlapping owner+id pairs arrive through all three
  const requests = OWNERS.flatMap((owner) =>
    IDS.flatMap((id) =>
      Array.from({ length: ATTEMPTS }, (_, attempt) => ({
        owner,
        id,
        name: attempt % 2 === 0 ? `even-${id}` : `odd-${id}`,
        server: servers[(id + attempt) % servers.length] as ServerProcess,
      })),
    ),
  )
  // and each instance's first batch is held on the owners' locks, so that the creates arriving
  // meanwhile queue up and go in batches (group commit)
  const holder = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  await holder`select pg_advisory_lock(hashtextextended(owner, 0)) from unnest(${OWNERS}::text[]) as owner`
  const pending = Promise.all(
    requests.map(async ({ owner, id, name, server }) => {
      const response = await postPlant(server.url, tokens.get(owner) ?? '', { id, name })
      return { owner, id, name, status: response.status, body: await response.json() }
    }),
  )
  await waitForWaiters(holder, servers.length)
  await Bun.sleep(500)
  await holder`select pg_advisory_unlock_all()`
  await holder.end()
  const answers = await pending

  // then every answer is 200 or 409, never 500
  expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200, 409]))
  // and the log holds exactly one event per owner+id
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const counted = new Map<string, { owner: string; id: string; n: number; name: string }>()
    for (const event of await openedLog(sql, createKeyring(TEST_KEYS))) {
      if (event.owner === null || event.data === null) continue
      const id = String(event.data.id)
      const name = String(event.data.name)
      const seen = counted.get(`${event.owner}/${id}`)
      counted.set(`${event.owner}/${id}`, {
        owner: event.owner,
        id,
        n: (seen?.n ?? 0) + 1,
        name: seen && seen.name < name ? seen.name : name,
      })
    }
    const perPlant = [...counted.values()]
    expect(perPlant).toHaveLength(OWNERS.length * IDS.length)
    expect(perPlant.every((row) => row.n === 1)).toBe(true)
    // and each 200 answered with the plant that was stored, each 409 came from the other name
    const stored = new Map(perPlant.map((row) => [`${row.owner}/${row.id}`, row.name]))
    for (const { owner, id, name, status, body } of answers) {
      const winner = stored.get(`${owner}/${id}`)
      expect({ status, body }).toEqual(
        name === winner
          ? { status: 200, body: { name } }
          : { status: 409, body: { error: 409, message: expect.any(String) } },
      )
    }
    // and the creates went in batches: transactions that appended several events
    const [batches] = await sql<{ transactions: number; shared: number }[]>`
      select count(*)::int as transactions, count(*) filter (where n > 1)::int as shared
      from (select transaction_id, count(*) as n from events group by 1) as per_transaction`
    expect(batches?.shared).toBeGreaterThan(0)
    expect(batches?.transactions).toBeLessThan(OWNERS.length * IDS.length)
    // and the migrations, run by three processes at once, were each applied exactly once
    const applied = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`
    expect(applied[0]?.n).toBe(MIGRATIONS.length)
  } finally {
    await sql.end()
  }
  // and every instance lists the same plants, one per id
  for (const owner of OWNERS) {
    const listings = await Promise.all(
      servers.map((server) => listEveryPlant(server.url, tokens.get(owner) ?? '', 5)),
    )
    expect(listings[0]).toHaveLength(IDS.length)
    expect(listings[1]).toEqual(listings[0] ?? [])
    expect(listings[2]).toEqual(listings[0] ?? [])
  }
}, 60_000)

// Until `count` sessions wait on an advisory lock (each instance's first batch).
async function waitForWaiters(sql: postgres.Sql, count: number): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const [row] = await sql<{ n: number }[]>`
      select count(distinct pid)::int as n from pg_locks where locktype = 'advisory' and not granted
        and database = (select oid from pg_database where datname = current_database())`
    if ((row?.n ?? 0) >= count) return
    await Bun.sleep(50)
  }
  throw new Error(`fewer than ${count} batches waited on the owners' locks`)
}
