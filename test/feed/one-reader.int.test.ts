import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { drizzle } from 'drizzle-orm/postgres-js'
import type postgres from 'postgres'
import type { Database } from '../../src/database/database.ts'
import type { LoggedEvent } from '../../src/event-log/reading.ts'
import { soleLeadership } from '../../src/feed/leadership.ts'
import { feedStream } from '../../src/feed/nats-stream.ts'
import { type Relay, runRelay } from '../../src/feed/relay.ts'
import { type LogFollower, runLogFollower } from '../../src/follower/follower.ts'
import { createLogger } from '../../src/shared/logger.ts'
import { createTestFeed, TEST_NATS_URL, type TestFeed } from '../support/nats.ts'
import { create, openTestStorage, type TestStorage } from '../support/storage.ts'

// One reader of the log per process. The feed and the change streams both
// take from the follower, so a wake-up costs one read of the events table, whoever consumes it.
const logger = createLogger('silent')
let storage: TestStorage
let feed: TestFeed
let nc: NatsConnection
let follower: LogFollower
let relay: Relay
let logReads = 0

// The store as the follower sees it, on the same connections, counting the statements that read
// the events table (prepared or not: Drizzle's logger sees every query it sends).
function counted(db: Database): Database {
  const client = (db as unknown as { $client: postgres.Sql }).$client
  return drizzle({
    client,
    logger: {
      logQuery: (query) => {
        if (/\bfrom "events"/.test(query)) logReads++
      },
    },
  })
}

beforeAll(async () => {
  storage = await openTestStorage('postgres')
  feed = await createTestFeed('one_reader')
  nc = await connect({ servers: TEST_NATS_URL })
  // A poll far away: only the wakes below make the follower read.
  follower = runLogFollower({ db: counted(storage.db), keyring: storage.keyring, logger, pollMs: 60_000 })
  relay = runRelay({
    follower,
    stream: feedStream(nc, { stream: feed.stream, subjectPrefix: feed.prefix }),
    leadership: soleLeadership,
    messages: { subjectPrefix: feed.prefix, source: 'plant-store-test' },
    logger,
  })
  await follower.ready()
})
afterAll(async () => {
  await relay.stop()
  await follower.stop()
  await nc.close()
  await feed.drop()
  await storage.close()
})

test('each wake-up reads the log once, for the feed and the change streams together', async () => {
  // given: a change stream's consumer beside the feed
  const streamed: LoggedEvent[] = []
  follower.subscribe((events) => streamed.push(...events))
  await Bun.sleep(300)
  const readsPerWake: number[] = []
  for (let created = 1; created <= 5; created++) {
    // when: a plant is created and the follower woken, as a create in this process does
    await create(storage, 'owner', { id: BigInt(created), name: `plant ${created}` })
    const before = logReads
    follower.wake()
    await feed.waitFor(created, 5000)
    while (streamed.length < created) await Bun.sleep(5)
    await Bun.sleep(100)
    readsPerWake.push(logReads - before)
  }
  // then: both consumers have every plant, for one read of the log per wake-up
  expect(streamed.map((event) => event.position)).toEqual([1n, 2n, 3n, 4n, 5n])
  expect(readsPerWake).toEqual([1, 1, 1, 1, 1])
}, 60_000)
