import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createPlantStoreClient, type PlantStoreClient } from 'plant-store/client'
import { serveEmbeddedDefault } from '../support/embedded-default.ts'
import type { ServiceStorage } from '../support/service.ts'

// The package's typed client (Eden Treaty) over real HTTP against the server process: its types
// come from the app's own schemas, so `bun run typecheck` fails when a call no longer fits the API.
let storage: ServiceStorage
let client: PlantStoreClient
let anonymous: PlantStoreClient

beforeAll(async () => {
  const served = await serveEmbeddedDefault('eden', ['eden-user'])
  storage = served.storage
  const { server, token } = served
  client = createPlantStoreClient(server.url, { token })
  anonymous = createPlantStoreClient(server.url)
}, 60_000)
afterAll(async () => {
  await storage?.stop()
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

test('a position goes back as the number or bigint it is: on a listing, and to follow the changes after it', async () => {
  // given a create's position, read as a bigint
  const created = await client.plants.post({ id: 10n, name: 'Pilea' })
  const position = BigInt(created.response.headers.get('plant-store-position') ?? 'none')
  // when a listing asks to see it, then it is listed
  const listed = await client.plants.get({ headers: { 'plant-store-position': position } })
  expect(listed.status).toBe(200)
  expect(listed.data?.at(-1)).toEqual({ name: 'Pilea' })
  // when the changes after it are followed (a bigint, then a number), then the stream opens there
  for (const after of [position, Number(position)]) {
    const followed = await client.plants.changes.get({ query: { after } })
    expect({ after, status: followed.status }).toEqual({ after, status: 200 })
    expect(followed.response.headers.get('content-type')).toBe('text/event-stream')
    await followed.response.body?.cancel()
  }
  // and a position the API refuses is still refused
  const refused = await client.plants.get({ headers: { 'plant-store-position': -1 } })
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
  }
  expect(typeof calls).toBe('function')
})
