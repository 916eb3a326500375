import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { tokenHeader } from '../support/plant-client.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

let service: Service
let servers: ServerProcess[] = []
let token: string

beforeAll(async () => {
  // Started together: both apply the migrations at start, under the advisory lock.
  service = await startService({ label: 'e2e', instances: 2 })
  servers = [...service.servers]
  token = (await service.cli(['token', 'issue', 'racer'])).stdout.trim()
})
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop('SIGTERM')))
  await service?.stop()
})

test('two server processes racing on one owner+id append exactly one event and never answer 500', async () => {
  const statuses = await Promise.all(
    Array.from({ length: 40 }, (_, index) =>
      fetch(`${servers[index % 2]?.url}/plants`, {
        method: 'POST',
        headers: { ...tokenHeader(token), 'content-type': 'application/json' },
        body: JSON.stringify({ id: 42, name: index % 4 === 0 ? 'Winner?' : 'Other' }),
      }).then((response) => response.status),
    ),
  )
  expect(statuses.every((status) => status === 200 || status === 409)).toBe(true)
  const sql = postgres(String(service.databaseUrl), { max: 1 })
  try {
    const [row] = await sql`select count(*)::int as n from events`
    expect(row?.n).toBe(1)
  } finally {
    await sql.end()
  }
  const listings = await Promise.all(
    servers.map((server) =>
      fetch(`${server.url}/plants`, { headers: tokenHeader(token) }).then((r) => r.json()),
    ),
  )
  expect(listings[0]).toHaveLength(1)
  expect(listings[1]).toEqual(listings[0])
})

test('SIGTERM stops a PostgreSQL-backed server with exit code 0', async () => {
  const server = servers.pop()
  expect(await server?.stop('SIGTERM')).toBe(0)
})
