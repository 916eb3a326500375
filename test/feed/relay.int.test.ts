import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { sql } from 'drizzle-orm'
import { openPostgres, rowsOf } from '../../src/database/database.ts'
import { soleLeadership } from '../../src/feed/leadership.ts'
import { type FeedStream, feedStream } from '../../src/feed/nats-stream.ts'
import type { RelayDeps } from '../../src/feed/relay.ts'
import { createLogger } from '../../src/shared/logger.ts'
import { exportEvents } from '../../src/transfer/export-events.ts'
import { importEvents } from '../../src/transfer/import-events.ts'
import { TRICKY_PLANTS } from '../projection/fixtures.ts'
import { createTestFeed, positionsOf, TEST_NATS_URL, type TestFeed } from '../support/nats.ts'
import { create, openTestStorage, STORAGE_KINDS, type TestStorage } from '../support/storage.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { type TestRelay as Relay, relayToFeed, runTestRelay } from '../support/test-relay.ts'
import { insertSealedEvent } from './sealed-event.ts'

const logger = createLogger('silent')
const RECORDED = '2026-01-02T03:04:05.678Z'

// Text that a careless encoder or decoder changes: a leading byte order mark, combining marks,
// right-to-left script, a ZWJ emoji sequence.
const TEXT_PLANTS = [
  { id: 1n, name: '\uFEFFBOM first', tag: '\uFEFF' },
  { id: 2n, name: 'e\u0301 n\u0303 combining', tag: 'שלום עולם' },
  { id: 3n, name: '👩‍🌾 farmer', tag: null },
]

// PlantCreated v0, as an older version wrote it: `plantId` a JSON number, `title`, no tag.
const V0_EVENT = {
  owner: 'olivia',
  plantId: '9007199254740993',
  schemaVersion: 0,
  data: '{"plantId": 9007199254740993, "title": "Old fern"}',
  recordedAt: '2020-01-01T00:00:00.123456Z',
}

type Expected = { owner: string; id: bigint; name: string; tag?: string | null; time: string }

function expectedMessage(position: string, source: string, { owner, id, name, tag, time }: Expected) {
  const data = tag === null || tag === undefined ? { id: String(id), name } : { id: String(id), name, tag }
  return {
    specversion: '1.0',
    id: position,
    source,
    type: 'PlantCreated',
    subject: String(id),
    time,
    datacontenttype: 'application/json',
    owner,
    data,
  }
}

async function positionsInLog(storage: TestStorage): Promise<string[]> {
  const result = await storage.db.execute(
    sql`select position::text as position from events order by events.position`,
  )
  const rows = rowsOf<{ position: string }>(result)
  return rows.map((row) => row.position)
}

async function pseudonymsByOwner(storage: TestStorage): Promise<Map<string, string>> {
  const result = await storage.db.execute(sql`select owner, pseudonym from owner_keys where not erasing`)
  return new Map(
    rowsOf<{ owner: string; pseudonym: string }>(result).map((row) => [row.owner, row.pseudonym]),
  )
}

for (const kind of STORAGE_KINDS) {
  describe(`the relay on ${kind}`, () => {
    let storage: TestStorage
    let feed: TestFeed
    let nc: NatsConnection
    let stream: FeedStream
    const relays: Relay[] = []
    const relay = (options: Partial<RelayDeps> = {}) => {
      const started = runTestRelay(storage, {
        stream: Promise.resolve(stream),
        leadership: soleLeadership,
        messages: { subjectPrefix: feed.prefix, source: 'plant-store-test' },
        logger,
        ...options,
      })
      relays.push(started)
      return started
    }
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      feed = await createTestFeed(`relay_${kind}`)
      nc = await connect({ servers: TEST_NATS_URL })
      stream = await feedStream(nc, { stream: feed.stream, subjectPrefix: feed.prefix })
    })
    afterAll(async () => {
      for (const started of relays) await started.stop()
      await nc.close()
      await feed.drop()
      await storage.close()
    })

    test('publishes every event once, in log order, as the CloudEvents message docs/feed.md describes', async () => {
      // given: an event in an older shape, then plants with exact ids and difficult text
      await insertSealedEvent(storage.db, storage.keyring, V0_EVENT)
      const expected: Expected[] = [
        { owner: 'olivia', id: 9007199254740993n, name: 'Old fern', time: '2020-01-01T00:00:00.123456Z' },
      ]
      for (const [owner, plants] of Object.entries({ ...TRICKY_PLANTS, carol: TEXT_PLANTS })) {
        for (const plant of plants) {
          await create(storage, owner, plant)
          expected.push({ owner, ...plant, time: RECORDED })
        }
      }
      // when
      const started = relay({ batchSize: 4 })
      const messages = await feed.waitFor(expected.length)
      await started.stop()
      // then
      const positions = await positionsInLog(storage)
      expect(positionsOf(messages)).toEqual(positions)
      expect(messages.map((message) => JSON.parse(message.body))).toEqual(
        expected.map((plant, index) =>
          expectedMessage(positions[index] as string, 'plant-store-test', plant),
        ),
      )
      const pseudonyms = await pseudonymsByOwner(storage)
      for (const [index, message] of messages.entries()) {
        const owner = expected[index]?.owner as string
        expect(message.subject).toBe(`${feed.prefix}.events.PlantCreated.${pseudonyms.get(owner)}`)
        expect(message.headers['Content-Type']).toEqual(['application/cloudevents+json'])
      }
      // a consumer reads the ids exactly, beyond 2^53 and at the int64 edges
      const ids = messages.map((message) =>
        BigInt((JSON.parse(message.body) as { data: { id: string } }).data.id),
      )
      expect(ids).toContain(9223372036854775807n)
      expect(ids).toContain(-9223372036854775808n)
      expect(ids).toContain(9007199254740993n)
    })

    test('a restart resumes where the stream ends', async () => {
      // given: the stream holds the log so far; more events are written while no relay runs
      const before = (await feed.read()).length
      await create(storage, 'dave', { id: 1n, name: 'After restart' })
      await create(storage, 'dave', { id: 2n, name: 'After restart too', tag: '' })
      // when
      const started = relay()
      const messages = await feed.waitFor(before + 2)
      await Bun.sleep(300)
      await started.stop()
      // then
      expect(positionsOf(await feed.read())).toEqual(await positionsInLog(storage))
      expect(messages).toHaveLength(before + 2)
      expect(JSON.parse(messages.at(-1)?.body ?? '{}').data).toEqual({
        id: '2',
        name: 'After restart too',
        tag: '',
      })
    })

    test('a create that wakes the relay is in the stream at once, not at the next poll', async () => {
      // given
      const started = relay({ pollMs: 20_000 })
      await Bun.sleep(300)
      const before = (await feed.read()).length
      // when
      await create(storage, 'erin', { id: 1n, name: 'Prompt' })
      started.wake()
      // then
      const messages = await feed.waitFor(before + 1, 2000)
      expect(JSON.parse(messages.at(-1)?.body ?? '{}').owner).toBe('erin')
      await started.stop()
    })

    test('two publishers at once (a stale leader) neither repeat nor skip an event', async () => {
      // given: two relays that both believe they lead, and creates while they run
      relay({ batchSize: 3, pollMs: 5 })
      relay({ batchSize: 7, pollMs: 5 })
      // when
      for (let id = 1n; id <= 60n; id++) await create(storage, 'frank', { id, name: `Plant ${id}` })
      const total = (await positionsInLog(storage)).length
      await feed.waitFor(total)
      await Bun.sleep(500)
      // then
      expect(positionsOf(await feed.read())).toEqual(await positionsInLog(storage))
    })
  })
}

describe('the relay on PostgreSQL, with writers elsewhere', () => {
  let storage: TestStorage
  let feed: TestFeed
  let relay: Relay
  beforeAll(async () => {
    storage = await openTestStorage('postgres')
    feed = await createTestFeed('relay_elsewhere')
    relay = relayToFeed(storage, feed, { pollMs: 50 })
  })
  afterAll(async () => {
    await relay.stop()
    await feed.drop()
    await storage.close()
  })

  test('events of another instance, imported ones and a late commit are all published, none skipped', async () => {
    const other = openPostgres({
      keys: TEST_KEYS,
      url: storage.url as string,
      poolSize: 2,
      statementTimeoutMs: 10_000,
    })
    // given: a transaction that takes a position and commits only after later ones did
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const late = other.db.transaction(async (tx) => {
      await insertSealedEvent(tx, other.keyring, {
        owner: 'late',
        plantId: '1',
        schemaVersion: 1,
        data: '{"id": "1", "name": "Late", "tag": null}',
        recordedAt: new Date().toISOString(),
      })
      await held
    })
    await Bun.sleep(100)
    // when: another instance writes (no wake here), then the late one commits
    for (let id = 1n; id <= 5n; id++) await create(other, 'grace', { id, name: `Elsewhere ${id}` })
    await Bun.sleep(300)
    release()
    await late
    // and events come in by `events import --append`, exported from another store
    const source = await openTestStorage('embedded')
    await create(source, 'imported', { id: 42n, name: 'Imported', tag: 'x' })
    let exported = ''
    await exportEvents(source.db, async (chunk) => {
      exported += chunk
    })
    await source.close()
    const lines = (async function* () {
      yield* exported.split('\n')
    })()
    await importEvents(storage.db, storage.keyring, lines, { append: true })
    // then
    const total = (await positionsInLog(storage)).length
    expect(total).toBe(7)
    const messages = await feed.waitFor(total, 5000)
    expect(positionsOf(messages)).toEqual(await positionsInLog(storage))
    const owners = messages.map((message) => JSON.parse(message.body).owner)
    // the late transaction took the lowest position: the others were published only once it committed
    expect(owners).toEqual(['late', 'grace', 'grace', 'grace', 'grace', 'grace', 'imported'])
    await other.close()
  })
})

describe('the relay on a stream whose duplicate window is one second', () => {
  let storage: TestStorage
  let feed: TestFeed
  beforeAll(async () => {
    storage = await openTestStorage('postgres')
    feed = await createTestFeed('relay_window')
    await feed.create({ duplicate_window: 1_000_000_000 })
  })
  afterAll(async () => {
    await feed.drop()
    await storage.close()
  })

  test('a restart after the window has passed neither repeats nor skips an event', async () => {
    const start = async () => relayToFeed(storage, feed, { pollMs: 20 })
    // given
    for (let id = 1n; id <= 20n; id++) await create(storage, 'hana', { id, name: `Window ${id}` })
    const first = await start()
    await feed.waitFor(20)
    await first.stop()
    // when: the window passes, more is written, and the relay starts again
    await Bun.sleep(1500)
    for (let id = 21n; id <= 30n; id++) await create(storage, 'hana', { id, name: `Window ${id}` })
    const second = await start()
    await feed.waitFor(30)
    await Bun.sleep(500)
    await second.stop()
    // then
    expect(positionsOf(await feed.read())).toEqual(await positionsInLog(storage))
  })
})
