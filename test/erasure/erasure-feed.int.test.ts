import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { jetstreamManager, type StreamConfig } from '@nats-io/jetstream'
import { headers } from '@nats-io/transport-node'
import { sql } from 'drizzle-orm'
import type { Config, FeedConfig } from '../../src/config/config.ts'
import { rowsOf } from '../../src/database/database.ts'
import { eraseOwner } from '../../src/erasure/erase-owner.ts'
import { countEventsAfter } from '../../src/event-log/reading.ts'
import { legacyPlantSubject } from '../../src/feed/cloud-event.ts'
import { erasureFeed } from '../../src/feed/erasure-feed.ts'
import { recordedFeed, recordFeed } from '../../src/feed/feed-fact.ts'
import { advisoryLockLeadership, soleLeadership } from '../../src/feed/leadership.ts'
import { feedStream } from '../../src/feed/nats-stream.ts'
import { isPublishable } from '../../src/feed/publishable.ts'
import { runRelay } from '../../src/feed/relay.ts'
import { runLogFollower } from '../../src/follower/follower.ts'
import { silentLogger } from '../../src/shared/logger.ts'
import { createTestFeed, type FeedMessageSeen, positionsOf, type TestFeed } from '../support/nats.ts'
import { create, listing, openTestStorage, STORAGE_KINDS, type TestStorage } from '../support/storage.ts'
import { relayToFeed } from '../support/test-relay.ts'

const logger = silentLogger()
const ANN = [
  { id: 1n, name: 'Ann fern', tag: 'ann-tag' },
  { id: 2n, name: 'Ann fig', tag: null },
  { id: 3n, name: 'Ann palm', tag: null },
]
const BOB = [
  { id: 1n, name: 'Bob cactus', tag: null },
  { id: 2n, name: 'Bob moss', tag: 'bob-tag' },
]
// Nothing listens there: NATS cannot be reached.
const UNREACHABLE = 'nats://127.0.0.1:1'

type Body = { type: string; owner: string; data?: { id: string; name: string; tag?: string } }
const bodyOf = (message: FeedMessageSeen) => JSON.parse(message.body) as Body

for (const kind of STORAGE_KINDS) {
  describe(`the feed's part of an erasure on ${kind}`, () => {
    let storage: TestStorage
    let feed: TestFeed
    let config: FeedConfig
    let storageConfig: Config['storage']
    const stops: (() => Promise<unknown>)[] = []

    const relay = (target: TestFeed = feed) => {
      const started = relayToFeed(storage, target, { pollMs: 50 })
      stops.push(started.stop)
      return started
    }
    const erasure = (overrides: Partial<FeedConfig> = {}, waitMs = 15_000) => {
      const opened = erasureFeed({
        config: { ...config, ...overrides },
        storage: storageConfig,
        db: storage.db,
        keyring: storage.keyring,
        logger,
        waitMs,
      })
      stops.push(opened.close)
      return opened
    }
    const logPositions = async (where = sql`true`) =>
      rowsOf<{ position: string }>(
        await storage.db.execute(
          sql`select position::text as position from events where ${where} order by position`,
        ),
      ).map((row) => row.position)
    const keyOf = async (owner: string) =>
      rowsOf<{ erasing: boolean }>(
        await storage.db.execute(sql`select erasing from owner_keys where owner = ${owner}`),
      )
    // Ann's and Bob's plants by turns, in the stream.
    const given = async () => {
      for (const [index, plant] of ANN.entries()) {
        await create(storage, 'ann', plant)
        const other = BOB[index]
        if (other) await create(storage, 'bob', other)
      }
    }
    // The same, published to a stream created with `settings`.
    const givenPublishedTo = async (settings: Partial<StreamConfig>) => {
      await feed.create(settings)
      await given()
      const publishing = relay()
      await feed.waitFor(5)
      await publishing.stop()
    }

    beforeEach(async () => {
      storage = await openTestStorage(kind)
      feed = await createTestFeed(`erasure_${kind}`)
      config = {
        servers: [feed.env.EVENTS_NATS_URL as string],
        stream: feed.stream,
        subjectPrefix: feed.prefix,
        source: 'plant-store',
        replicas: 1,
      }
      storageConfig =
        kind === 'postgres'
          ? { kind, url: storage.url as string, poolSize: 2, statementTimeoutMs: 10_000 }
          : { kind, dataDir: '' }
    })
    afterEach(async () => {
      for (const stop of stops.splice(0).reverse()) await stop()
      await feed.drop()
      await storage.close()
    })

    test('with no relay running, the command publishes the notice itself and purges the owner, legacy messages too', async () => {
      // given: the first two events published before the log was erasable (no subject token),
      // the rest by a relay that then stops
      await given()
      const [first, second] = await logPositions()
      await feed.create()
      for (const [position, owner, plant] of [
        [first, 'ann', ANN[0]],
        [second, 'bob', BOB[0]],
      ] as const) {
        const legacy = headers()
        legacy.set('Nats-Msg-Id', position as string)
        const body = { type: 'PlantCreated', owner, data: { id: String(plant?.id), name: plant?.name } }
        await feed.nc.request(legacyPlantSubject(feed.prefix), JSON.stringify(body), {
          headers: legacy,
          timeout: 5000,
        })
      }
      const publishing = relay()
      await feed.waitFor(5)
      await publishing.stop()
      // when
      const result = await eraseOwner(storage.db, 'ann', { feed: erasure() })
      // then
      expect(result).toEqual({ plants: 3, completed: 1 })
      const messages = await feed.read()
      const notices = messages.filter((message) => bodyOf(message).type === 'OwnerErased')
      expect(notices).toHaveLength(1)
      const [notice] = notices as [FeedMessageSeen]
      expect(notice.subject).toBe(`${feed.prefix}.events.OwnerErased`)
      expect(bodyOf(notice)).toEqual({
        specversion: '1.0',
        id: notice.headers['Nats-Msg-Id']?.[0],
        source: 'plant-store',
        type: 'OwnerErased',
        time: expect.any(String),
        owner: 'ann',
      } as unknown as Body)
      const rest = messages.filter((message) => message !== notice)
      for (const message of rest) {
        expect(bodyOf(message).owner).toBe('bob')
        for (const plant of ANN) expect(message.body).not.toContain(plant.name)
      }
      // the rest is the log of the others, in order, the notice after it
      expect(positionsOf(messages)).toEqual(
        await logPositions(
          sql`type = 'OwnerErased' or metadata->>'pseudonym' in (select pseudonym from owner_keys where owner = 'bob')`,
        ),
      )
      expect(await keyOf('ann')).toEqual([])
      expect(await listing(storage.db, 'ann')).toEqual([])
    })

    test('NATS unreachable: pending, the owner hidden and the key kept; a rerun with NATS completes', async () => {
      // given
      await given()
      const publishing = relay()
      await feed.waitFor(5)
      await publishing.stop()
      // when
      const started = Date.now()
      const failed = eraseOwner(storage.db, 'ann', { feed: erasure({ servers: [UNREACHABLE] }, 1500) })
      // then
      await expect(failed).rejects.toMatchObject({ code: 'ERASURE_PENDING' })
      await expect(failed).rejects.toThrow(`NATS at ${UNREACHABLE} (EVENTS_NATS_URL) could not be reached`)
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(await listing(storage.db, 'ann')).toEqual([])
      expect(await keyOf('ann')).toEqual([{ erasing: true }])
      expect((await feed.read()).map((message) => bodyOf(message).owner)).toContain('ann')
      // and a rerun completes it
      expect(await eraseOwner(storage.db, 'ann', { feed: erasure() })).toEqual({ plants: 3, completed: 1 })
      expect(await keyOf('ann')).toEqual([])
      const owners = (await feed.read()).map((message) => [bodyOf(message).type, bodyOf(message).owner])
      expect(owners).toEqual([
        ['PlantCreated', 'bob'],
        ['PlantCreated', 'bob'],
        ['OwnerErased', 'ann'],
      ])
    })

    test('a stream that refuses purges: the command fails naming it, the erasure pending', async () => {
      // given
      await givenPublishedTo({ deny_purge: true })
      // when
      const failed = eraseOwner(storage.db, 'ann', { feed: erasure() })
      // then
      await expect(failed).rejects.toThrow(
        `the NATS stream "${feed.stream}" (EVENTS_NATS_STREAM) refuses purges`,
      )
      expect(await keyOf('ann')).toEqual([{ erasing: true }])
      expect(await listing(storage.db, 'ann')).toEqual([])
    })

    test('a stream created after the erasure holds nothing of the owner and no notice; the relay reads past them once, and no lag is left', async () => {
      // given: an erasure completed (no feed then), its events last in the log
      await given()
      await eraseOwner(storage.db, 'ann')
      const bobs = await logPositions(
        sql`metadata->>'pseudonym' in (select pseudonym from owner_keys where owner = 'bob')`,
      )
      // when: a relay publishes the log to a new stream; its reads are counted
      const log = runLogFollower({ db: storage.db, keyring: storage.keyring, logger, pollMs: 50 })
      let reads = 0
      const counted = {
        ...log,
        // Each read gives way to timers: a relay that read in a loop would otherwise starve them.
        eventsAfter: async (after: bigint, count: number) => {
          reads++
          await new Promise((resolve) => setImmediate(resolve))
          return log.eventsAfter(after, count)
        },
      }
      const publishing = runRelay({
        follower: counted,
        stream: feedStream(feed.nc, { stream: feed.stream, subjectPrefix: feed.prefix }),
        leadership: soleLeadership,
        messages: { subjectPrefix: feed.prefix, source: 'plant-store' },
        logger,
        pollMs: 1000,
        leadershipCheckMs: 1000,
      })
      stops.push(log.stop, publishing.stop)
      const messages = await feed.waitFor(bobs.length)
      reads = 0
      await Bun.sleep(1000)
      // then
      expect(positionsOf(messages)).toEqual(bobs)
      expect(messages.map((message) => bodyOf(message).owner)).toEqual(['bob', 'bob'])
      expect(reads).toBeLessThan(10)
      const tail = BigInt(bobs.at(-1) as string)
      expect(await countEventsAfter(storage.db, tail)).toBeGreaterThan(0)
      expect(await countEventsAfter(storage.db, tail, isPublishable)).toBe(0)
    })

    test('a stream whose subjects miss the prefix: pending, naming EVENTS_NATS_SUBJECT_PREFIX, not NATS as unreachable', async () => {
      // given
      await given()
      const publishing = relay()
      await feed.waitFor(5)
      await publishing.stop()
      // when
      const failed = eraseOwner(storage.db, 'ann', { feed: erasure({ subjectPrefix: 'wrong' }) })
      // then
      await expect(failed).rejects.toMatchObject({ code: 'ERASURE_PENDING' })
      await expect(failed).rejects.toThrow(
        `EVENTS_NATS_SUBJECT_PREFIX: the NATS stream "${feed.stream}" (EVENTS_NATS_STREAM) captures ["${feed.prefix}.events.>"], which does not cover "wrong.events.>"`,
      )
      expect((await feed.read()).map((message) => bodyOf(message).type)).not.toContain('OwnerErased')
    })

    test('a stream that does not exist holds nothing of the owner: the erasure completes and makes none', async () => {
      // given
      await given()
      // when
      const result = await eraseOwner(storage.db, 'ann', { feed: erasure() })
      // then
      expect(result).toEqual({ plants: 3, completed: 1 })
      expect(await keyOf('ann')).toEqual([])
      const jsm = await jetstreamManager(feed.nc)
      expect(await jsm.streams.info(feed.stream).catch(() => 'missing')).toBe('missing')
    })

    test('a stream that refuses deletes: the command fails naming it, the erasure pending', async () => {
      // given
      await givenPublishedTo({ deny_delete: true })
      // when
      const failed = eraseOwner(storage.db, 'ann', { feed: erasure() })
      // then
      await expect(failed).rejects.toThrow(
        `the NATS stream "${feed.stream}" (EVENTS_NATS_STREAM) refuses deletes (deny_delete)`,
      )
      expect(await keyOf('ann')).toEqual([{ erasing: true }])
    })

    test('the recorded feed: stream and subject prefix; a record of an earlier version names the stream alone', async () => {
      expect(await recordedFeed(storage.db)).toBeUndefined()
      await storage.db.execute(sql`insert into store_facts (name, value) values ('feed', 'OLD_STREAM')`)
      expect(await recordedFeed(storage.db)).toEqual({ stream: 'OLD_STREAM' })
      await recordFeed(storage.db, config)
      expect(await recordedFeed(storage.db)).toEqual({ stream: feed.stream, subjectPrefix: feed.prefix })
    })

    test("the follower's kept events are handed out as a read now gives them: nothing of an owner erased since", async () => {
      // given: a follower that has read both owners' plants as they came, and keeps them
      const log = runLogFollower({ db: storage.db, keyring: storage.keyring, logger, pollMs: 50 })
      stops.push(log.stop)
      log.hold()
      await log.ready()
      await given()
      const head = BigInt((await logPositions()).at(-1) as string)
      while ((log.position() ?? 0n) < head) await log.advanced(1000)
      expect((await log.eventsAfter(0n, 100)).map((event) => event.metadata.owner)).toEqual([
        'ann',
        'bob',
        'ann',
        'bob',
        'ann',
      ])
      // when
      await eraseOwner(storage.db, 'ann')
      // then: Ann's plants are left out, her completed notice names no one, and a batch still
      // holds as many events as asked for when there are that many
      const bobs = (await logPositions(
        sql`metadata->>'pseudonym' in (select pseudonym from owner_keys where owner = 'bob')`,
      )) as [string, string]
      const [notice] = (await logPositions(sql`type = 'OwnerErased'`)) as [string]
      while ((log.position() ?? 0n) < BigInt(notice)) await log.advanced(1000)
      const read = await log.eventsAfter(0n, 100)
      expect(read.map((event) => [String(event.position), event.type, event.metadata.owner])).toEqual<
        (string | null)[][]
      >([
        [bobs[0], 'PlantCreated', 'bob'],
        [bobs[1], 'PlantCreated', 'bob'],
        [notice, 'OwnerErased', null],
      ])
      expect((await log.eventsAfter(0n, 2)).map((event) => String(event.position))).toEqual(bobs)
    })

    if (kind === 'postgres') {
      test('with an instance leading the feed, the command leaves the publishing to it', async () => {
        // given: a relay that holds the service's leadership, publishing
        await given()
        let published = 0
        const leadership = advisoryLockLeadership(storage.url as string, feed.stream)
        stops.push(leadership.close)
        const leading = relayToFeed(storage, feed, {
          leadership,
          pollMs: 50,
          onPublished: (count) => {
            published += count
          },
        })
        stops.push(leading.stop)
        await feed.waitFor(5)
        // when
        expect(await eraseOwner(storage.db, 'ann', { feed: erasure() })).toEqual({ plants: 3, completed: 1 })
        // then: the notice went out through it, once
        const messages = await feed.read()
        expect(messages.map((message) => bodyOf(message).type)).toEqual([
          'PlantCreated',
          'PlantCreated',
          'OwnerErased',
        ])
        expect(published).toBe(6)
      })
    }
  })
}
