import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { LoggedEvent } from '../../src/event-log/reading.ts'
import { type LogFollower, runLogFollower } from '../../src/follower/follower.ts'
import { silentLogger } from '../../src/shared/logger.ts'
import { createHarness, type Harness, STORAGE_KINDS } from '../support/harness.ts'
import { changesRequest, openSse, plantOf, type SseReader } from '../support/sse-client.ts'
import { create, openTestStorage, type TestStorage } from '../support/storage.ts'

// A follower with `idleAfterMs` reads the log only while held (an open change stream, a feed that
// leads), and starts afresh when held again.
const IDLE_MS = 150
const idleFor = () => Bun.sleep(IDLE_MS + 250)

describe('a follower held by nobody (PostgreSQL)', () => {
  let storage: TestStorage
  let follower: LogFollower
  const handed: bigint[] = []
  let nextId = 1
  const append = async () => {
    await create(storage, 'ivy', { id: BigInt(nextId), name: `plant ${nextId}` })
    nextId++
    follower.wake()
  }
  beforeAll(async () => {
    storage = await openTestStorage('postgres')
    follower = runLogFollower({
      db: storage.db,
      keyring: storage.keyring,
      logger: silentLogger(),
      pollMs: 20,
      idleAfterMs: IDLE_MS,
    })
    follower.subscribe((events: LoggedEvent[]) => handed.push(...events.map((event) => event.position)))
  })
  afterAll(async () => {
    await follower.stop()
    await storage.close()
  })

  test('reads nothing until held, then starts at the horizon and hands out what follows', async () => {
    // given: creates while nobody holds the follower
    await append()
    await append()
    await idleFor()
    // then: the log was not read
    expect(follower.reads()).toBe(0)
    expect(follower.position()).toBeUndefined()
    // when: held
    const release = follower.hold()
    await follower.ready()
    // then: it stands past those creates, and hands out the next one
    expect(follower.position()).toBe(2n)
    await append()
    while (handed.length < 1) await Bun.sleep(10)
    expect(handed).toEqual([3n])
    release()
  })

  test('stops reading once released for idleAfterMs, and starts afresh when held again', async () => {
    // given: released (the test before), and idle
    await idleFor()
    const reads = follower.reads()
    // when: creates meanwhile
    await append()
    await append()
    await idleFor()
    // then: no read, and nothing handed out
    expect(follower.reads()).toBe(reads)
    expect(follower.position()).toBeUndefined()
    expect(handed).toEqual([3n])
    // when: held again
    const release = follower.hold()
    await follower.ready()
    await append()
    while (handed.length < 2) await Bun.sleep(10)
    // then: it started at the horizon of then; the creates meanwhile were handed to nobody
    expect(handed).toEqual([3n, 6n])
    expect(await follower.eventsAfter(3n, 10)).toEqual([
      expect.objectContaining({ position: 4n }),
      expect.objectContaining({ position: 5n }),
      expect.objectContaining({ position: 6n }),
    ])
    release()
  })
})

for (const kind of STORAGE_KINDS) {
  describe(`change streams on an idle follower (${kind})`, () => {
    let h: Harness
    const open: SseReader[] = []
    let token: string
    const createPlant = async (id: number) => {
      const response = await h.request('POST', '/plants', { token, body: { id, name: `plant ${id}` } })
      expect(response.status).toBe(200)
    }
    const stream = async (after: string) => {
      const reader = await openSse(changesRequest('http://localhost', token, { after }), (request) =>
        h.app.handle(request),
      )
      open.push(reader)
      return reader
    }
    const ids = (events: Awaited<ReturnType<SseReader['take']>>) => events.map((event) => plantOf(event).id)
    beforeAll(async () => {
      h = await createHarness(kind, { changes: { idleAfterMs: IDLE_MS } })
      token = await h.tokenFor('ivy')
    })
    afterAll(async () => {
      await Promise.all(open.map((reader) => reader.close()))
      await h.close()
    })

    test('a stream opened after creates nobody followed gets every one, then live ones, without a gap', async () => {
      // given: creates while no stream is open
      await createPlant(1)
      await createPlant(2)
      await idleFor()
      // when
      const first = await stream('0')
      // then
      expect(ids(await first.take(2))).toEqual(['1', '2'])
      await createPlant(3)
      expect(ids(await first.take(1))).toEqual(['3'])
      // and when it closes, creates meanwhile, and a stream resumes after the last it saw
      await first.close()
      await idleFor()
      await createPlant(4)
      await createPlant(5)
      await idleFor()
      const resumed = await stream('3')
      expect(ids(await resumed.take(2))).toEqual(['4', '5'])
      await createPlant(6)
      expect(ids(await resumed.take(1))).toEqual(['6'])
      expect(await resumed.collectFor(200)).toEqual([])
    })
  })
}
