import { expect, test } from 'bun:test'
import { tokenHeader } from '../support/plant-client.ts'
import type { PrimaryWithReplica } from '../support/postgres-replica.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { create, readsFrom, tokenFor, withReplicatedService } from './replica-client.ts'

// Conditional listings through a streaming replica (docs/api.md; docs/operating.md, Scaling out): the replica answers 304,
// and a tag with the caller's position is compared only where that position is visible.
const READ_WAIT_MS = 1000
let pair: PrimaryWithReplica
let server: ServerProcess
withReplicatedService(READ_WAIT_MS, (service) => {
  ;({ pair, server } = service)
})

async function get(token: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/plants?limit=20`, {
    headers: { ...tokenHeader(token), ...headers },
  })
  const body = await response.text()
  return {
    status: response.status,
    body,
    tag: response.headers.get('etag') ?? '',
    position: response.headers.get('plant-store-position'),
  }
}

test('the replica answers 304; with the position of a plant it has not applied, the 200 comes from the primary', async () => {
  // given a plant the replica has applied, and its listing's tag
  const token = await tokenFor('conditional')
  await create(server.url, token, 1, 'old')
  await pair.caughtUp()
  const first = await get(token)
  expect(first.status).toBe(200)
  // when the tag is sent back, the replica answers 304 with the same tag and position
  const before = await readsFrom(server.url)
  const unchanged = await get(token, { 'if-none-match': first.tag })
  expect(unchanged).toEqual({ status: 304, body: '', tag: first.tag, position: first.position })
  const after = await readsFrom(server.url)
  expect(after.all - before.all).toBe(1)
  expect(after.primary - before.primary).toBe(0)
  await pair.pauseReplay()
  try {
    // when a plant is created while replay is paused
    const position = await create(server.url, token, 2, 'new')
    // then the tag without the position still matches on the replica, which does not show it yet
    expect((await get(token, { 'if-none-match': first.tag })).status).toBe(304)
    // and with the position, the old tag is stale: the primary answers with the new listing
    const seen = await get(token, { 'if-none-match': first.tag, 'plant-store-position': String(position) })
    expect(seen.status).toBe(200)
    expect(JSON.parse(seen.body)).toEqual([{ name: 'old' }, { name: 'new' }])
    expect(seen.tag).not.toBe(first.tag)
    expect(seen.position).toBe(String(position))
    // and its new tag, with the position, is 304 (from the primary: the replica still lags)
    const primaryBefore = (await readsFrom(server.url)).primary
    const current = await get(token, { 'if-none-match': seen.tag, 'plant-store-position': String(position) })
    expect(current).toEqual({ status: 304, body: '', tag: seen.tag, position: String(position) })
    expect((await readsFrom(server.url)).primary - primaryBefore).toBe(1)
  } finally {
    await pair.resumeReplay()
  }
  // once the replica has replayed, it gives the same tag as the primary did
  await pair.caughtUp()
  const replicaBefore = await readsFrom(server.url)
  const replicated = await get(token)
  expect(replicated.tag).toBe((await get(token, { 'plant-store-position': '1' })).tag)
  expect((await readsFrom(server.url)).primary - replicaBefore.primary).toBe(0)
}, 60_000)
