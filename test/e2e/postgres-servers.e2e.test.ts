import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { runCli, type ServerProcess, startServer } from '../support/server-process.ts'

const SECRET = 'e2e-secret-that-is-at-least-32-bytes-long'
let database: TestDatabase
let servers: ServerProcess[] = []
let token: string

beforeAll(async () => {
  database = await createTestDatabase('e2e')
  const env = { DATABASE_URL: database.url, AUTH_JWT_SECRET: SECRET }
  // Started together: both apply the migrations at start, under the advisory lock.
  servers = await Promise.all([startServer(env), startServer(env)])
  token = (await runCli(['token', 'issue', 'racer'], env)).stdout.trim()
})
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop('SIGTERM')))
  await database.drop()
})

test('two server processes racing on one owner+id append exactly one event and never answer 500', async () => {
  const statuses = await Promise.all(
    Array.from({ length: 40 }, (_, index) =>
      fetch(`${servers[index % 2]?.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 42, name: index % 4 === 0 ? 'Winner?' : 'Other' }),
      }).then((response) => response.status),
    ),
  )
  expect(statuses.every((status) => status === 200 || status === 409)).toBe(true)
  const sql = postgres(database.url, { max: 1 })
  try {
    const [row] = await sql`select count(*)::int as n from events`
    expect(row?.n).toBe(1)
  } finally {
    await sql.end()
  }
  const listings = await Promise.all(
    servers.map((server) =>
      fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json()),
    ),
  )
  expect(listings[0]).toHaveLength(1)
  expect(listings[1]).toEqual(listings[0])
})

test('SIGTERM stops a PostgreSQL-backed server with exit code 0', async () => {
  const server = servers.pop()
  expect(await server?.stop('SIGTERM')).toBe(0)
})
