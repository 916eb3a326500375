import { afterAll, beforeAll, expect, test } from 'bun:test'
import {
  expectLongAbsenceResumes,
  expectSigtermEndsStreams,
  expectStalledClientDisconnected,
  openStreamCount,
} from '../support/change-scenarios.ts'
import { denoServerCommand } from '../support/deno.ts'
import { postPlant } from '../support/plant-client.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'
import { changesRequest, openSse, plantOf, type SseReader } from '../support/sse-client.ts'

// Three instances on one PostgreSQL database, one of them on Deno (the pinned binary).
let service: Service
let servers: ServerProcess[] = []
const readers: SseReader[] = []
const STREAMS_PER_OWNER = 4
const tokenFor = async (subject: string) => (await service.cli(['token', 'issue', subject])).stdout.trim()
const follow = async (server: ServerProcess | undefined, token: string, options = {}) => {
  const reader = await openSse(changesRequest(server?.url ?? '', token, options))
  expect(reader.response.status).toBe(200)
  readers.push(reader)
  return reader
}
const create = async (server: ServerProcess | undefined, token: string, id: number, name: string) => {
  expect((await postPlant(server?.url ?? '', token, { id, name })).status).toBe(200)
}

beforeAll(async () => {
  // The first applies the migrations; the others start on a migrated database.
  service = await startService({
    label: 'changes_e2e',
    env: { CHANGE_STREAMS_PER_OWNER: String(STREAMS_PER_OWNER) },
  })
  servers = [service.server]
  servers.push(
    ...(await Promise.all([
      service.startAnother(),
      service.startAnother({ NO_COLOR: '1' }, denoServerCommand()),
    ])),
  )
}, 120_000)
afterAll(async () => {
  await Promise.all(readers.map((reader) => reader.close()))
  await service?.stop()
})

test('a create through one instance reaches the streams open on every instance, Deno too', async () => {
  const token = await tokenFor('everywhere')
  const streams = await Promise.all(servers.map((server) => follow(server, token)))
  await create(servers[0], token, 1, 'seen everywhere')
  for (const reader of streams) {
    expect((await reader.take(1, 5000)).map(plantOf)).toEqual([{ id: '1', name: 'seen everywhere' }])
  }
}, 60_000)

test('resuming with Last-Event-ID gives exactly the missed plants, once, in order, whoever wrote them', async () => {
  // given a client that read three plants and went away
  const [a, b, c] = servers
  const token = await tokenFor('resume')
  const first = await follow(a, token, { after: '0' })
  for (let id = 1; id <= 3; id++) await create(a, token, id, `a${id}`)
  const seen = await first.take(3)
  await first.close()
  // when two other instances create more meanwhile
  await Promise.all([
    (async () => {
      for (let id = 4; id <= 9; id++) await create(b, token, id, `b${id}`)
    })(),
    (async () => {
      for (let id = 10; id <= 15; id++) await create(c, token, id, `c${id}`)
    })(),
  ])
  // then reconnecting with the last id it saw gives the twelve it missed, once, in position order
  const resumed = await follow(a, token, { lastEventId: seen.at(-1)?.id })
  const missed = [...(await resumed.take(12)), ...(await resumed.collectFor(300))]
  expect(missed.map((event) => plantOf(event).name).sort()).toEqual(
    [4, 5, 6, 7, 8, 9]
      .map((id) => `b${id}`)
      .concat([10, 11, 12, 13, 14, 15].map((id) => `c${id}`))
      .sort(),
  )
  const positions = missed.map((event) => BigInt(event.id ?? ''))
  expect(positions.every((position, index) => index === 0 || position > (positions[index - 1] ?? 0n))).toBe(
    true,
  )
  expect(positions[0]).toBeGreaterThan(BigInt(seen.at(-1)?.id ?? ''))
  // and after=0 replays all fifteen on any instance
  const replay = await follow(c, token, { after: '0' })
  expect((await replay.take(15)).map((event) => event.id)).toEqual(
    [...seen, ...missed].map((event) => event.id),
  )
}, 60_000)

test('CHANGE_STREAMS_PER_OWNER caps one owner per instance; a client that hangs up frees its place', async () => {
  const [a, b] = servers
  const token = await tokenFor('capped')
  const first = await Promise.all(Array.from({ length: STREAMS_PER_OWNER }, () => follow(a, token)))
  const refused = await fetch(changesRequest(a?.url ?? '', token))
  expect(refused.status).toBe(429)
  expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
  expect(((await refused.json()) as { error: number }).error).toBe(429)
  // the cap is per instance: another one takes the same owner
  await follow(b, token)
  // a client that closes its connection frees its place as soon as the server sees it gone
  await first[0]?.close()
  const deadline = Date.now() + 2000
  let status = 0
  while (status !== 200 && Date.now() < deadline) {
    const response = await fetch(changesRequest(a?.url ?? '', token))
    status = response.status
    if (status === 200) await response.body?.cancel()
    else await Bun.sleep(20)
  }
  expect(status).toBe(200)
}, 60_000)

test('a client back after a long absence gets thousands of plants at the size limits, exact, also reading slowly', async () => {
  await expectLongAbsenceResumes(servers[0] as ServerProcess, await tokenFor('long-absence'))
}, 300_000)

test('a client that stops reading is disconnected and the memory stays flat', async () => {
  const server = servers[1] as ServerProcess
  for (const reader of readers.splice(0)) await reader.close()
  await Bun.sleep(100)
  expect(await openStreamCount(server.url)).toBe(0)
  const result = await expectStalledClientDisconnected(
    server,
    await tokenFor('stalled'),
    await tokenFor('warm-up'),
  )
  console.log(`postgres stalled client: the server grew ${result.grewMb.toFixed(1)} MB`)
}, 180_000)

test('SIGTERM ends the open streams and the instance exits at once', async () => {
  await expectSigtermEndsStreams(servers[0] as ServerProcess, await tokenFor('leaving'))
}, 60_000)
