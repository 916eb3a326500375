import { afterEach, beforeEach, expect, test } from 'bun:test'
import { treaty } from '@elysiajs/eden'
import { createInMemoryStore, type InMemoryStore } from 'plant-store/test-store'

// A user's test file of six tests on createInMemoryStore, written like the example in docs/testing.md, for
// test/bench/embedded-default.ts to time and weigh (`bun test test/bench/in-memory-suite.ts`;
// not part of `bun run test`, whose files end in .test.ts).
let store: InMemoryStore
beforeEach(async () => {
  store = await createInMemoryStore()
})
afterEach(() => store.close())

const api = async (subject = 'alice') =>
  treaty(store.app, { headers: { authorization: `Bearer ${await store.tokenFor(subject)}` } })

test('a plant is stored and found again', async () => {
  const alice = await api()
  expect((await alice.plants.post({ id: 7, name: 'Monstera', tag: 'tropical' })).status).toBe(200)
  expect((await alice.plants.get()).data).toEqual([{ name: 'Monstera', tag: 'tropical' }])
})

test('every test starts from an empty store', async () => {
  expect((await (await api()).plants.get()).data).toEqual([])
})

test('a retry is safe and a change is a conflict', async () => {
  const alice = await api()
  expect((await alice.plants.post({ id: 1, name: 'Fern' })).status).toBe(200)
  expect((await alice.plants.post({ id: 1, name: 'Fern' })).status).toBe(200)
  expect((await alice.plants.post({ id: 1, name: 'Palm' })).status).toBe(409)
})

test('owners see only their own plants', async () => {
  expect((await (await api('alice')).plants.post({ id: 1, name: 'Aloe' })).status).toBe(200)
  expect((await (await api('bob')).plants.get()).data).toEqual([])
})

test('a page of twenty out of fifty', async () => {
  const alice = await api()
  for (let id = 1; id <= 50; id++) await alice.plants.post({ id, name: `plant ${id}` })
  expect((await alice.plants.get({ query: { limit: '20' } })).data).toHaveLength(20)
})

test('a bad body is refused and changes nothing', async () => {
  const alice = await api()
  expect((await alice.plants.post({ id: 1, name: '' })).status).toBe(400)
  expect((await alice.plants.get()).data).toEqual([])
})
