import { afterEach, beforeEach, expect, test } from 'bun:test'
import { treaty } from '@elysiajs/eden'
import { createInMemoryStore, type InMemoryStore } from 'plant-store/test-store'

let store: InMemoryStore
beforeEach(async () => {
  store = await createInMemoryStore() // a fresh, empty store for each test
})
afterEach(() => store.close())

test('my code stores a plant and finds it again', async () => {
  const api = treaty(store.app, { headers: { authorization: `Bearer ${await store.tokenFor('alice')}` } })

  expect((await api.plants.post({ id: 7, name: 'Monstera', tag: 'tropical' })).status).toBe(200)
  expect((await api.plants.get()).data).toEqual([{ name: 'Monstera', tag: 'tropical' }])
})

test('every test starts from an empty store', async () => {
  const api = treaty(store.app, { headers: { authorization: `Bearer ${await store.tokenFor('alice')}` } })

  expect((await api.plants.get()).data).toEqual([])
})
