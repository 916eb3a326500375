import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPostgres } from '../../src/database/database.ts'
import { createHarness, type Harness, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// Several app instances with their own pools on one database stand in for several processes
// here; test/start/scale-out.e2e.test.ts runs several real processes.
let h: Harness
let token: string
const others: { close: () => Promise<void> }[] = []
beforeAll(async () => {
  h = await createHarness('postgres')
  token = await h.tokenFor('racer')
})
afterAll(async () => {
  await Promise.all(others.map((other) => other.close()))
  await h.close()
})

function secondInstance() {
  const handle = openPostgres({
    keys: TEST_KEYS,
    url: h.databaseUrl ?? '',
    poolSize: 10,
    statementTimeoutMs: 10_000,
  })
  others.push(handle)
  return testApp({ db: handle.db, keyring: handle.keyring }).app
}

test('concurrent creations of one owner+id append exactly one event; the rest get 200 or 409, never 500', async () => {
  const apps = [h.app, secondInstance(), secondInstance()]
  for (let round = 0; round < 5; round++) {
    const id = 1000 + round
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        apps[index % apps.length]?.handle(
          new Request('http://localhost/plants', {
            method: 'POST',
            headers: { ...tokenHeader(token), 'content-type': 'application/json' },
            body: JSON.stringify({ id, name: index % 2 === 0 ? 'Even' : 'Odd' }),
          }),
        ),
      ),
    )
    const statuses = responses.map((response) => response?.status)
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true)
    // Whichever name won, every request with that name is a 200 and every other a 409.
    expect(statuses.filter((status) => status === 200).length).toBe(15)
  }
  expect(await h.countEvents()).toBe(5)
  expect(await h.countPlants()).toBe(5)
})
