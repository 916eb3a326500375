import { afterEach, describe, expect, test } from 'bun:test'
import type { PrimaryWithReplica } from '../support/postgres-replica.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { changesRequest, openSse, plantOf, type SseEvent, type SseReader } from '../support/sse-client.ts'
import { create, eventually, metric, tokenFor, withReplicatedService } from './replica-client.ts'

// GET /plants/changes on a server reading from a real streaming replica (docs/live-changes.md; docs/operating.md, Scaling out): the
// catch-up comes from the replica when it has replayed far enough, else from the primary, and
// either way every plant comes once, in order.
const READ_WAIT_MS = 300
let pair: PrimaryWithReplica
let server: ServerProcess
let readers: SseReader[] = []
withReplicatedService(READ_WAIT_MS, (service) => {
  ;({ pair, server } = service)
})
afterEach(async () => {
  await Promise.all(readers.map((reader) => reader.close()))
  readers = []
})

const follow = async (token: string, options: { after?: string; lastEventId?: string } = {}) => {
  const reader = await openSse(changesRequest(server.url, token, options))
  readers.push(reader)
  expect(reader.response.status).toBe(200)
  return reader
}
const changeReads = async () => ({
  primary: await metric(server.url, 'plant_store_change_reads_total', { source: 'primary' }),
  all: await metric(server.url, 'plant_store_change_reads_total'),
})
const idsOf = (events: SseEvent[]) => events.map((event) => plantOf(event).id)
// Events come in increasing positions, each once.
const expectInOrder = (events: SseEvent[]) => {
  const positions = events.map((event) => BigInt(event.id ?? '-1'))
  expect(positions).toEqual(positions.toSorted((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
  expect(new Set(positions).size).toBe(positions.length)
}
const createMany = async (token: string, from: number, count: number) => {
  const positions: bigint[] = []
  for (let id = from; id < from + count; id++) positions.push(await create(server.url, token, id))
  return positions
}
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => String(from + i))

describe('a change stream on a server with read replicas', () => {
  test('catches up from the replica, every plant once and in order, then goes live', async () => {
    // given plants the replica has replayed
    const token = await tokenFor('from-the-replica')
    await createMany(token, 1, 25)
    await pair.caughtUp()
    const before = await changeReads()
    // when a stream opens from the beginning
    const stream = await follow(token, { after: '0' })
    const caughtUp = await stream.take(25)
    // then it gets every plant, in order, read from the replica
    expect(idsOf(caughtUp)).toEqual(range(1, 25))
    const after = await changeReads()
    expect(after.all - before.all).toBeGreaterThan(0)
    expect(after.primary - before.primary).toBe(0)
    // and plants created after it opened arrive live, none twice
    await createMany(token, 26, 2)
    const live = [...(await stream.take(2)), ...(await stream.collectFor(300))]
    expect(idsOf(live)).toEqual(['26', '27'])
    expectInOrder([...caughtUp, ...live])
  })

  test('with replay paused, plants the replica has not replayed still reach streams opened then', async () => {
    // given a plant the replica has replayed, then replay paused and two plants created
    const token = await tokenFor('replay-paused')
    const [first] = await createMany(token, 1, 1)
    await pair.caughtUp()
    await pair.pauseReplay()
    try {
      await createMany(token, 2, 2)
      const before = await changeReads()
      // when streams open from the beginning, after the first plant, and at the head
      const fromStart = await follow(token, { after: '0' })
      const resumed = await follow(token, { lastEventId: String(first) })
      const atHead = await follow(token)
      // then the replica's view is not trusted: the catch-ups come whole, from the primary
      expect(idsOf(await fromStart.take(3))).toEqual(['1', '2', '3'])
      expect(idsOf(await resumed.take(2))).toEqual(['2', '3'])
      expect((await changeReads()).primary - before.primary).toBeGreaterThan(0)
      // and a plant created now reaches each stream once, after what it caught up, and the
      // stream opened at the head gets only that one
      await createMany(token, 4, 1)
      for (const stream of [fromStart, resumed, atHead]) {
        expect(idsOf([...(await stream.take(1)), ...(await stream.collectFor(300))])).toEqual(['4'])
      }
    } finally {
      await pair.resumeReplay()
    }
  })

  test('a stopped replica leaves the catch-up to the primary; back, it serves again', async () => {
    const token = await tokenFor('replica-stopped')
    await createMany(token, 1, 5)
    await pair.caughtUp()
    await pair.stopReplica()
    try {
      // when a stream opens while the replica is down
      const before = await changeReads()
      const stream = await follow(token, { after: '0' })
      // then the primary serves its catch-up, whole
      const events = [...(await stream.take(5)), ...(await stream.collectFor(200))]
      expect(idsOf(events)).toEqual(range(1, 5))
      expectInOrder(events)
      const after = await changeReads()
      expect(after.primary - before.primary).toBe(after.all - before.all)
      expect(after.primary - before.primary).toBeGreaterThan(0)
    } finally {
      await pair.startReplica()
    }
    // and once it is back and replayed, it serves the catch-ups again
    await pair.caughtUp()
    await eventually('the replica serves catch-ups again', async () => {
      const before = await changeReads()
      const stream = await follow(token, { after: '0' })
      expect(idsOf(await stream.take(5))).toEqual(range(1, 5))
      await stream.close()
      const after = await changeReads()
      return after.all > before.all && after.primary === before.primary
    })
  }, 60_000)
})
