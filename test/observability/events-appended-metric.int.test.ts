import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { openTestStorage, type TestStorage } from '../support/storage.ts'

let handle: TestStorage
beforeAll(async () => {
  handle = await openTestStorage('postgres', {
    label: 'appended_metric',
    poolSize: 8,
    statementTimeoutMs: 10_000,
  })
})
afterAll(async () => {
  await handle?.close()
})

// The metric's sample; a missing metric fails the test rather than reading as 0 or NaN.
function sample(metrics: string, name: string): number {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${name} `))
  if (line === undefined) throw new Error(`${name} is missing from /metrics`)
  return Number(line.slice(name.length + 1))
}

test('plant_store_events_appended_total counts appended events, whatever retries, conflicts and races consumed', async () => {
  // given an app on PostgreSQL and a caller
  const { app, tokenFor } = testApp({ db: handle.db, keyring: handle.keyring })
  const token = await tokenFor('counted', 600)
  const post = async (id: number, name: string) => {
    const response = await app.handle(
      new Request('http://localhost/plants', {
        method: 'POST',
        headers: { ...tokenHeader(token), 'content-type': 'application/json' },
        body: JSON.stringify({ id, name }),
      }),
    )
    return response.status
  }
  // when plants are created, retried with the same body, refused as conflicts, and raced
  for (let id = 1; id <= 5; id++) expect(await post(id, `plant ${id}`)).toBe(200)
  for (let id = 1; id <= 3; id++) expect(await post(id, `plant ${id}`)).toBe(200)
  for (let id = 1; id <= 3; id++) expect(await post(id, 'another name')).toBe(409)
  const raced = await Promise.all(
    Array.from({ length: 24 }, (_, index) => post(100 + (index % 3), `racer ${index % 2}`)),
  )
  expect(raced.every((status) => status === 200 || status === 409)).toBe(true)
  await Bun.sleep(20) // the metrics are written after the response
  const metrics = await (await app.handle(new Request('http://localhost/metrics'))).text()
  // then the counter equals the events in the log, not the head position
  const sql = postgres(String(handle.url), { max: 1, onnotice: () => {} })
  const [{ events }] = (await sql`select count(*)::int as events from events`) as unknown as [
    { events: number },
  ]
  await sql.end()
  expect(events).toBe(8)
  expect(sample(metrics, 'plant_store_events_appended_total')).toBe(events)
}, 60_000)
