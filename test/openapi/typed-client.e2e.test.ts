import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createPlantStoreClient, type PlantStoreClient } from 'plant-store/client'
import type { PlantChangeEvent } from 'plant-store/types'
import postgres from 'postgres'
import { type Service, startService } from '../support/service.ts'

// The package's typed client (Eden Treaty) over real HTTP against the server process, on PostgreSQL: its types
// come from the app's own schemas, so `bun run typecheck` fails when a call no longer fits the API.
let service: Service
let client: PlantStoreClient
let anonymous: PlantStoreClient

beforeAll(async () => {
  service = await startService({ label: 'eden' })
  client = createPlantStoreClient(service.url, { token: await service.tokenFor('eden-user') })
  anonymous = createPlantStoreClient(service.url)
}, 60_000)
afterAll(async () => {
  await service?.stop()
})

test('a typed client creates, retries, conflicts and lists, with typed data and typed errors', async () => {
  // when a plant is created, then the answer is a typed Plant
  const created = await client.plants.post({ id: 7, name: 'Monstera', tag: 'tropical' })
  expect(created.status).toBe(200)
  const plant: { name: string; tag?: string } | null = created.data
  expect(plant).toEqual({ name: 'Monstera', tag: 'tropical' })

  // when the same create is retried, then it is the same plant
  expect((await client.plants.post({ id: 7, name: 'Monstera', tag: 'tropical' })).data).toEqual(plant)

  // when the id is reused with another name, then the error is typed with the Error body
  const conflict = await client.plants.post({ id: 7, name: 'Fern' })
  expect(conflict.status).toBe(409)
  expect(conflict.error?.value).toMatchObject({ error: 409 })

  // when the caller lists, page by page, then the plants are typed and in order
  await client.plants.post({ id: 8, name: 'Fern', tag: null })
  const page = await client.plants.get({ query: { limit: '1' } })
  expect(page.data).toEqual([{ name: 'Monstera', tag: 'tropical' }])
  expect(page.response.headers.get('link')).toContain('rel="next"')
  expect((await client.plants.get()).data).toEqual([{ name: 'Monstera', tag: 'tropical' }, { name: 'Fern' }])
})

test('positions past 2^53 stay exact: a create answers one, a listing and the change stream take it back as a bigint or a string, and the stream yields typed events', async () => {
  // given a log whose positions are past 2^53, where a number loses digits
  const sql = postgres(String(service.databaseUrl), { max: 1, onnotice: () => {} })
  await sql`select setval('events_position_seq', 9007199254740992)`
  await sql.end()
  // when a plant is created, then its position is the exact string
  const created = await client.plants.post({ id: 10n, name: 'Pilea' })
  const position = created.response.headers.get('plant-store-position') ?? 'none'
  expect(position).toBe('9007199254740993')
  // when a listing asks to see it, as a bigint and as the string, then it is listed
  for (const asked of [BigInt(position), position]) {
    const listed = await client.plants.get({ headers: { 'plant-store-position': asked } })
    expect({ asked, status: listed.status, last: listed.data?.at(-1) }).toEqual({
      asked,
      status: 200,
      last: { name: 'Pilea' },
    })
  }
  // when the changes after the position before it are followed, then the plant comes as a typed
  // event whose id is the exact position
  for (const after of [BigInt(position) - 1n, String(BigInt(position) - 1n)]) {
    const followed = await client.plants.changes.get({ query: { after } })
    expect(followed.status).toBe(200)
    const events: PlantChangeEvent[] = []
    for await (const event of followed.data ?? []) {
      events.push(event)
      break
    }
    expect(events).toEqual([{ id: position, event: 'PlantCreated', data: { id: '10', name: 'Pilea' } }])
  }
  // and a position the API refuses is still refused
  const refused = await client.plants.get({ headers: { 'plant-store-position': '-1' } })
  expect(refused.status).toBe(400)
})

test('a name that looks like a date comes back as the string it is', async () => {
  // when a plant is named as a date reads, then the answers hold that string, not a Date
  const created = await client.plants.post({ id: 9, name: '2026-11-29', tag: 'Sun Nov 29 2026' })
  expect(created.data).toEqual({ name: '2026-11-29', tag: 'Sun Nov 29 2026' })
  expect((await client.plants.get()).data?.at(-1)).toEqual({ name: '2026-11-29', tag: 'Sun Nov 29 2026' })
})

test('a call without a token is a typed 401', async () => {
  const refused = await anonymous.plants.get()
  expect(refused.status).toBe(401)
  expect(refused.error?.value).toMatchObject({ error: 401 })
})

test('the compiler refuses calls that do not fit the API', () => {
  // Type-level checks: each line fails `tsc` unless the API rejects it. They are never sent.
  const calls = () => {
    // @ts-expect-error name is required
    client.plants.post({ id: 1 })
    // @ts-expect-error id is an integer, not a string
    client.plants.post({ id: '1', name: 'x' })
    // @ts-expect-error there is no DELETE /plants
    client.plants.delete()
    // @ts-expect-error a position is an integer, not a boolean
    client.plants.changes.get({ query: { after: true } })
    // @ts-expect-error a position is never a number, which loses digits past 2^53
    client.plants.changes.get({ query: { after: 1 } })
    // @ts-expect-error nor in the header
    client.plants.get({ headers: { 'plant-store-position': 1 } })
  }
  expect(typeof calls).toBe('function')
})
