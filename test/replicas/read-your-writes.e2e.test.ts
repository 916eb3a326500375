import { describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { tokenHeader } from '../support/plant-client.ts'
import type { PrimaryWithReplica } from '../support/postgres-replica.ts'
import type { ServerProcess } from '../support/server-process.ts'
import type { ReplicatedService } from '../support/service.ts'
import {
  create,
  eventually,
  list,
  metric,
  readsFrom,
  tokenFor,
  withReplicatedService,
} from './replica-client.ts'

// A real primary and streaming replica, and the server reading from the replica (docs/operating.md, Scaling out).
const READ_WAIT_MS = 1500
let service: ReplicatedService
let pair: PrimaryWithReplica
let server: ServerProcess
withReplicatedService(READ_WAIT_MS, (started) => {
  service = started
  ;({ pair, server } = started)
})

const countEvents = async () => {
  const sql = postgres(pair.primaryUrl, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql`select count(*)::int as n from events`
    return Number(row?.n)
  } finally {
    await sql.end()
  }
}

describe('routing', () => {
  test('with replay paused, a GET without the position misses a new plant and one with it lists it', async () => {
    // given a plant the replica has applied, and replay then paused
    const token = await tokenFor('routing')
    await create(server.url, token, 1, 'old')
    await pair.caughtUp()
    await pair.pauseReplay()
    try {
      // when a plant is created
      const position = await create(server.url, token, 2, 'new')
      // then a GET without the header is served by the replica, which does not show it yet
      const before = await readsFrom(server.url)
      expect((await list(server.url, token)).names).toEqual(['old'])
      const afterPlain = await readsFrom(server.url)
      expect(afterPlain.all - before.all).toBe(1)
      expect(afterPlain.primary - before.primary).toBe(0)
      // and a GET with the create's position lists it: the primary answers once the wait is over
      const waitedBefore = await metric(server.url, 'plant_store_read_position_wait_seconds_sum')
      const started = Date.now()
      const seen = await list(server.url, token, position)
      expect(seen.status).toBe(200)
      expect(seen.names).toEqual(['old', 'new'])
      expect(Date.now() - started).toBeGreaterThanOrEqual(READ_WAIT_MS - 50)
      expect((await readsFrom(server.url)).primary - afterPlain.primary).toBe(1)
      const waited = (await metric(server.url, 'plant_store_read_position_wait_seconds_sum')) - waitedBefore
      expect(waited).toBeGreaterThanOrEqual((READ_WAIT_MS - 50) / 1000)
      // and a page with it, too
      expect((await list(server.url, token, position, '?limit=1')).names).toEqual(['old'])
    } finally {
      await pair.resumeReplay()
    }
    // when replay resumes, the replica shows the position and serves the read itself
    const position = await create(server.url, token, 3, 'newer')
    await pair.caughtUp()
    const before = await readsFrom(server.url)
    expect((await list(server.url, token, position)).names).toEqual(['old', 'new', 'newer'])
    const after = await readsFrom(server.url)
    expect(after.all - before.all).toBe(1)
    expect(after.primary - before.primary).toBe(0)
  })

  test("a create's 200 carries its event's position, a retry the same one, a conflict none", async () => {
    const token = await tokenFor('positions')
    const first = await create(server.url, token, 10)
    const second = await create(server.url, token, 11)
    expect(second).toBeGreaterThan(first)
    // a retry of the same body: the position of the event that holds the plant
    expect(await create(server.url, token, 10)).toBe(first)
    const conflict = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { ...tokenHeader(token), 'content-type': 'application/json' },
      body: JSON.stringify({ id: 10, name: 'another name' }),
    })
    expect(conflict.status).toBe(409)
    expect(conflict.headers.get('plant-store-position')).toBeNull()
  })

  test("another owner's position sends the read to the primary at once", async () => {
    // given alice's plant, applied by the replica
    const alice = await tokenFor('alice-other')
    const bob = await tokenFor('bob-other')
    await create(server.url, bob, 1, "bob's")
    const position = await create(server.url, alice, 1, "alice's")
    await pair.caughtUp()
    // when bob sends alice's position
    const before = await readsFrom(server.url)
    const started = Date.now()
    const listed = await list(server.url, bob, position)
    // then he gets his own plants from the primary, without waiting for a replica
    expect(listed.names).toEqual(["bob's"])
    expect(Date.now() - started).toBeLessThan(READ_WAIT_MS)
    expect((await readsFrom(server.url)).primary - before.primary).toBe(1)
  })

  test.each(['abc', '-1', '1.5', '+1', ' ', '9223372036854775808', '1, 2'])(
    'a malformed position %p is 400 with the Error body and changes nothing',
    async (value) => {
      const token = await tokenFor('malformed')
      const events = await countEvents()
      const response = await fetch(`${server.url}/plants`, {
        headers: { ...tokenHeader(token), 'plant-store-position': value },
      })
      expect(response.status).toBe(400)
      expect(response.headers.get('content-type')).toStartWith('application/json')
      expect(await response.json()).toEqual({
        error: 400,
        message: 'plant-store-position must be a decimal integer from 0 to 9223372036854775807',
      })
      expect(await countEvents()).toBe(events)
    },
  )

  test('the largest position and leading zeros are read as integers', async () => {
    const token = await tokenFor('edges')
    const position = await create(server.url, token, 1)
    await pair.caughtUp()
    expect((await list(server.url, token, `000${position}`)).names).toEqual(['plant 1'])
    expect((await list(server.url, token, '0')).names).toEqual(['plant 1'])
    expect((await list(server.url, token, '9223372036854775807')).status).toBe(200)
  })
})

describe('read-your-writes under concurrency', () => {
  test('one client, concurrent creates, a GET with the highest position lists them all, while replay pauses and resumes at random', async () => {
    // given a server that waits briefly, and replay paused and resumed at random, the pauses
    // sometimes shorter and sometimes longer than that wait
    const waitMs = 40
    const server = await service.startAnother({ READ_WAIT_MS: String(waitMs) })
    const token = await tokenFor('concurrent')
    let toggling = true
    // Seeded, and the seed printed, so a failing schedule can be replayed (TOGGLE_SEED=…).
    const seed = Number(process.env.TOGGLE_SEED ?? Date.now() % 2 ** 31)
    console.log(`replica toggling seed: ${seed}`)
    const random = seededRandom(seed)
    const toggler = (async () => {
      while (toggling) {
        await Bun.sleep(random() * 3 * waitMs)
        await pair.pauseReplay().catch(() => {})
        await Bun.sleep(random() * 3 * waitMs)
        await pair.resumeReplay()
      }
    })()
    const created: { name: string; position: bigint }[] = []
    try {
      const before = await readsFrom(server.url)
      for (let round = 0; round < 40; round++) {
        // when one client creates plants concurrently and lists with the highest position it got
        const names = Array.from({ length: 8 }, (_, index) => `round ${round} plant ${index}`)
        const positions = await Promise.all(
          names.map((name, index) => create(server.url, token, round * 100 + index, name)),
        )
        created.push(...names.map((name, index) => ({ name, position: positions[index] ?? 0n })))
        const highest = positions.toSorted((a, b) => (a < b ? -1 : 1)).at(-1)
        const listed = await list(server.url, token, highest, round % 2 === 0 ? '' : '?limit=1000')
        // then every plant it created is listed, in the order of their positions
        expect(listed.status).toBe(200)
        const inOrder = created.toSorted((a, b) => (a.position < b.position ? -1 : 1))
        expect(listed.names).toEqual(inOrder.map((plant) => plant.name))
      }
      // and both kinds of read happened: served by the replica, and by the primary after a wait
      const after = await readsFrom(server.url)
      expect(after.all - before.all).toBe(40)
      expect(after.primary - before.primary).toBeGreaterThan(0)
      expect(after.primary - before.primary).toBeLessThan(40)
    } finally {
      toggling = false
      await toggler
      await server.stop()
    }
  }, 120_000)
})

describe('health', () => {
  test('/ready depends on the primary only: a stopped replica leaves it 200', async () => {
    await pair.stopReplica()
    try {
      const ready = await fetch(`${server.url}/ready`)
      expect(ready.status).toBe(200)
    } finally {
      await pair.startReplica()
    }
    await eventually('the replica serves reads again', async () => {
      const before = await readsFrom(server.url)
      await list(server.url, await tokenFor('health'))
      const after = await readsFrom(server.url)
      return after.primary === before.primary
    })
  })
})

// mulberry32: a small deterministic generator of numbers in [0, 1).
function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}
