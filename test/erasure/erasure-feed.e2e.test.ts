import { afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { jetstreamManager } from '@nats-io/jetstream'
import postgres from 'postgres'
import {
  createTestFeed,
  type FeedMessageSeen,
  natsAddress,
  positionsOf,
  type TestFeed,
} from '../support/nats.ts'
import { postPlant, tokenHeader, tokensFor } from '../support/plant-client.ts'
import { runCli } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { changesRequest, openSse, type SseReader } from '../support/sse-client.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'

const SECRET = 'erasure-feed-e2e-secret-of-32-bytes!'
const ANN = [
  { id: 11, name: 'Ann secret fern', tag: 'ann-private' },
  { id: 12, name: 'Ann secret fig' },
  { id: 13, name: 'Ann secret palm' },
]
const BOB = [
  { id: 21, name: 'Bob cactus' },
  { id: 22, name: 'Bob moss', tag: 'green' },
]

type Body = { type: string; owner: string; data?: { id: string; name: string; tag?: string } }
const bodyOf = (message: FeedMessageSeen) => JSON.parse(message.body) as Body

// Erasure (docs/erasure.md) with the feed on: `owners erase` beside a running instance that publishes it.
describe('owners erase with a service publishing the feed (PostgreSQL, NATS)', () => {
  let storage: ServiceStorage
  let sql: postgres.Sql
  let feed: TestFeed
  let tokens: Record<'ann' | 'bob', string>
  const proxies: TcpProxy[] = []
  const readers: SseReader[] = []
  const env = () => ({ ...storage.env, ...feed.env })
  const start = (extra: Record<string, string> = {}) => storage.startAnother({ ...feed.env, ...extra })
  const erase = (extra: Record<string, string> = {}, args: string[] = []) =>
    runCli(['owners', 'erase', 'ann', ...args], { ...env(), ...extra })
  const createAll = async (url: string) => {
    for (const [index, plant] of ANN.entries()) {
      expect((await postPlant(url, tokens.ann, plant)).status).toBe(200)
      const other = BOB[index]
      if (other) expect((await postPlant(url, tokens.bob, other)).status).toBe(200)
    }
  }
  const listing = async (url: string, token: string) =>
    (await fetch(`${url}/plants`, { headers: tokenHeader(token) })).json()
  const keyOf = async (owner: string) =>
    sql<{ erasing: boolean }[]>`select erasing from owner_keys where owner = ${owner}`.then((rows) => [
      ...rows,
    ])
  const positions = async (ofOwner: string) =>
    (
      await sql<{ position: string }[]>`select position::text from events
        where type = 'OwnerErased' or metadata->>'pseudonym' in (select pseudonym from owner_keys where owner = ${ofOwner})
        order by events.position`
    ).map((row) => row.position)
  // What the stream must hold after Ann's erasure: Bob's events and the one notice, in log order.
  const expectAnnGoneFromStream = async () => {
    const messages = await feed.read()
    const notices = messages.filter((message) => bodyOf(message).type === 'OwnerErased')
    expect(
      notices.map((message) => [message.subject, bodyOf(message).owner, 'data' in bodyOf(message)]),
    ).toEqual([[`${feed.prefix}.events.OwnerErased`, 'ann', false]])
    for (const message of messages.filter((message) => !notices.includes(message))) {
      expect(bodyOf(message).owner).toBe('bob')
      for (const plant of ANN) {
        expect(message.body).not.toContain(plant.name)
        expect(bodyOf(message).data?.id === String(plant.id)).toBe(false)
      }
    }
    expect(positionsOf(messages)).toEqual(await positions('bob'))
  }

  beforeAll(async () => {
    tokens = await tokensFor(SECRET, ['ann', 'bob'])
  })
  beforeEach(async () => {
    storage = await startService({ label: 'erasure_feed', secret: SECRET, instances: 0 })
    sql = postgres(String(storage.databaseUrl), { max: 2, onnotice: () => {} })
    feed = await createTestFeed('erasure_feed_e2e')
  })
  afterEach(async () => {
    await Promise.all(readers.splice(0).map((reader) => reader.close()))
    await sql.end()
    // Its servers are killed before their proxies and feed go.
    await storage.stop()
    for (const proxy of proxies.splice(0)) proxy.stop()
    await feed.drop()
  })

  test("the stream keeps none of the owner's messages and one notice; their change stream ends", async () => {
    // given: a service publishing the feed, both owners' plants in the stream, Ann's stream open
    const server = await start()
    await createAll(server.url)
    await feed.waitFor(5)
    const annStream = await openSse(changesRequest(server.url, tokens.ann, { after: '0' }))
    readers.push(annStream)
    expect(await annStream.take(3)).toHaveLength(3)
    // when
    const erased = await erase()
    // then
    expect(erased).toMatchObject({ exitCode: 0, stdout: '3\n' })
    await expectAnnGoneFromStream()
    expect(await keyOf('ann')).toEqual([])
    expect(await listing(server.url, tokens.ann)).toEqual([])
    expect(await listing(server.url, tokens.bob)).toHaveLength(2)
    const ended = await Promise.race([
      annStream.ended().then(() => 'ended'),
      Bun.sleep(5000).then(() => 'open'),
    ])
    expect(ended).toBe('ended')
    const fresh = await openSse(changesRequest(server.url, tokens.ann, { after: '0' }))
    readers.push(fresh)
    expect(await fresh.collectFor(500)).toEqual([])
    // and the feed is up to date by its own measure (the erased events are never published)
    const status = await runCli(['feed', 'status'], env())
    expect(status.stdout).toContain('up to date')
  })

  test('a stream made after the erasure, while the leader that published before it runs on, holds nothing of the owner and no notice', async () => {
    // given: a leader that has read both owners' plants as they came and published them, and Ann
    // erased. More plants than a round of the relay publishes come first, so that a relay starting
    // from the log's beginning reads the first round afresh and meets Ann's plants in what the
    // process's follower has kept of its reads.
    const server = await start()
    const first = 600
    let next = 1000
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 1000 + first) {
          const id = next++
          expect((await postPlant(server.url, tokens.bob, { id, name: `Bob ${id}` })).status).toBe(200)
        }
      }),
    )
    await feed.waitFor(first)
    await createAll(server.url)
    await feed.waitFor(first + 5)
    expect(await erase()).toMatchObject({ exitCode: 0, stdout: '3\n' })
    await feed.waitFor(first + 3)
    const notices = (
      await sql<{ position: string }[]>`select position::text from events where type = 'OwnerErased'`
    ).map((row) => row.position)
    // when: the stream is deleted (the remedy for NATS's files) and a plant is created through the
    // same leader, which makes the stream again and publishes the log from its start
    await (await jetstreamManager(feed.nc)).streams.delete(feed.stream)
    expect((await postPlant(server.url, tokens.bob, { id: 23, name: 'Bob ivy' })).status).toBe(200)
    const bobs = (await positions('bob')).filter((position) => !notices.includes(position))
    await feed.waitFor(bobs.length)
    await Bun.sleep(500)
    // then
    const messages = await feed.read()
    const others = messages.filter((message) => bodyOf(message).owner !== 'bob')
    expect(others.map((message) => message.body)).toEqual([])
    expect(positionsOf(messages)).toEqual(bobs)
  })

  test('NATS unreachable: exit 1, the owner hidden and the erasure pending; a rerun completes it', async () => {
    // given: the service and the command reach NATS through a proxy, which is cut
    const proxy = startTcpProxy(natsAddress())
    proxies.push(proxy)
    const viaProxy = { EVENTS_NATS_URL: `nats://127.0.0.1:${proxy.port}` }
    const server = await start(viaProxy)
    await createAll(server.url)
    await feed.waitFor(5)
    proxy.cut('reset')
    // when
    const failed = await erase(viaProxy, ['--wait', '2s'])
    // then
    expect(failed.exitCode).toBe(1)
    expect(failed.stdout).toBe('')
    expect(failed.stderr.trim().split('\n')).toHaveLength(1)
    expect(failed.stderr).toContain('EVENTS_NATS_URL')
    expect(failed.stderr).toContain('the owner is hidden, the erasure pending: run the command again')
    expect(await listing(server.url, tokens.ann)).toEqual([])
    expect(await keyOf('ann')).toEqual([{ erasing: true }])
    // and once NATS is back, a rerun completes it
    proxy.restore()
    const rerun = await erase(viaProxy)
    expect(rerun).toMatchObject({ exitCode: 0, stdout: '3\n' })
    expect(await keyOf('ann')).toEqual([])
    await expectAnnGoneFromStream()
  })

  test('without EVENTS_NATS_URL, against a store that records a feed, the command refuses and changes nothing', async () => {
    // given
    const server = await start()
    await createAll(server.url)
    // when
    const refused = await runCli(['owners', 'erase', 'ann'], storage.env)
    // then
    expect(refused.exitCode).not.toBe(0)
    expect(refused.stderr).toContain('EVENTS_NATS_URL')
    expect(refused.stderr).toContain(feed.stream)
    expect(await keyOf('ann')).toEqual([{ erasing: false }])
    expect(await listing(server.url, tokens.ann)).toHaveLength(3)
    expect(await sql`select 1 from events where type = 'OwnerErased'`).toHaveLength(0)
  })

  test("feed settings other than the store's: refused naming both, nothing changed, no stream made", async () => {
    // given: a store whose log goes to the test's stream
    const server = await start()
    await createAll(server.url)
    await feed.waitFor(5)
    const jsm = await jetstreamManager(feed.nc)
    const wrong = { EVENTS_NATS_STREAM: `${feed.stream}_WRONG`, EVENTS_NATS_SUBJECT_PREFIX: 'wrong' }
    // when: another stream and prefix, then the right stream with another prefix
    const both = await erase(wrong)
    const prefixAlone = await erase({ EVENTS_NATS_SUBJECT_PREFIX: 'wrong' })
    // then
    for (const refused of [both, prefixAlone]) {
      expect(refused.exitCode).not.toBe(0)
      expect(refused.stdout).toBe('')
      expect(refused.stderr).toContain(`the NATS stream "${feed.stream}" on "${feed.prefix}.events.>"`)
      expect(refused.stderr).toContain('nothing was changed')
      expect(refused.stderr).not.toContain('could not be reached')
    }
    expect(both.stderr).toContain(`not the NATS stream "${feed.stream}_WRONG" on "wrong.events.>"`)
    expect(prefixAlone.stderr).toContain(`not the NATS stream "${feed.stream}" on "wrong.events.>"`)
    expect(await keyOf('ann')).toEqual([{ erasing: false }])
    expect(await listing(server.url, tokens.ann)).toHaveLength(3)
    expect(await sql`select 1 from events where type = 'OwnerErased'`).toHaveLength(0)
    expect(await jsm.streams.info(`${feed.stream}_WRONG`).catch(() => 'missing')).toBe('missing')
    expect((await feed.read()).map((message) => bodyOf(message).owner).sort()).toEqual([
      'ann',
      'ann',
      'ann',
      'bob',
      'bob',
    ])
    // and with the store's settings it goes through
    expect(await erase()).toMatchObject({ exitCode: 0, stdout: '3\n' })
    await expectAnnGoneFromStream()
  })

  test('a store that never had a feed gets no NATS work from an erasure, whatever EVENTS_NATS_URL says', async () => {
    // given: a store served without a feed
    const server = await storage.startAnother()
    await createAll(server.url)
    // when: erased with the feed's settings, and with a NATS that cannot be reached
    const erased = await erase()
    const unreachable = await runCli(['owners', 'erase', 'bob', '--wait', '2s'], {
      ...env(),
      EVENTS_NATS_URL: 'nats://127.0.0.1:1',
    })
    // then: both complete, and no stream was made
    expect(erased).toMatchObject({ exitCode: 0, stdout: '3\n' })
    expect(unreachable).toMatchObject({ exitCode: 0, stdout: '2\n' })
    expect(erased.stderr).toContain('never published its log to NATS')
    expect(await keyOf('ann')).toEqual([])
    expect(await keyOf('bob')).toEqual([])
    const jsm = await jetstreamManager(feed.nc)
    expect(await jsm.streams.info(feed.stream).catch(() => 'missing')).toBe('missing')
  })

  test('a stream that refuses purges: exit 1 naming it, the erasure pending', async () => {
    // given
    await feed.create({ deny_purge: true })
    const server = await start()
    await createAll(server.url)
    await feed.waitFor(5)
    // when
    const failed = await erase()
    // then
    expect(failed.exitCode).toBe(1)
    expect(failed.stderr).toContain(`the NATS stream "${feed.stream}" (EVENTS_NATS_STREAM) refuses purges`)
    expect(await keyOf('ann')).toEqual([{ erasing: true }])
  })
})
