import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHarness, type Harness } from '../support/harness.ts'

// Every JSON answer names its type in one form, so that a client comparing the header (or a cache
// keyed on it) sees one type: `application/json`, which is UTF-8 by definition (RFC 8259).
let harness: Harness
let token: string
beforeAll(async () => {
  harness = await createHarness('postgres')
  token = await harness.tokenFor('ida')
})
afterAll(() => harness.close())

test('creates, retries, listings, pages, errors and probes all answer Content-Type: application/json', async () => {
  // given / when
  const answers = {
    create: await harness.request('POST', '/plants', { token, body: { id: 1, name: 'Fern' } }),
    retry: await harness.request('POST', '/plants', { token, body: { id: 1, name: 'Fern' } }),
    listing: await harness.request('GET', '/plants', { token }),
    page: await harness.request('GET', '/plants?limit=1', { token }),
    conflict: await harness.request('POST', '/plants', { token, body: { id: 1, name: 'Palm' } }),
    refused: await harness.request('POST', '/plants', { token, body: { id: 'x', name: 'Palm' } }),
    unauthenticated: await harness.request('GET', '/plants'),
    health: await harness.request('GET', '/health'),
    ready: await harness.request('GET', '/ready'),
  }
  // then
  const types = Object.fromEntries(
    Object.entries(answers).map(([name, answer]) => [
      name,
      `${answer.status} ${answer.headers.get('content-type')}`,
    ]),
  )
  expect(types).toEqual({
    create: '200 application/json',
    retry: '200 application/json',
    listing: '200 application/json',
    page: '200 application/json',
    conflict: '409 application/json',
    refused: '400 application/json',
    unauthenticated: '401 application/json',
    health: '200 application/json',
    ready: '200 application/json',
  })
})
