import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { type PublishedMessage, plantSubject } from '../../src/feed/cloud-event.ts'
import { type FeedStream, feedStream, StaleTail } from '../../src/feed/nats-stream.ts'
import { createTestFeed, positionsOf, TEST_NATS_URL, type TestFeed } from '../support/nats.ts'

let feed: TestFeed
let nc: NatsConnection
let stream: FeedStream

const message = (position: number): PublishedMessage => ({
  subject: plantSubject(feed.prefix, 'p1'),
  id: String(position),
  transactionId: String(1000 + position),
  body: `{"id":"${position}"}`,
})

beforeAll(async () => {
  feed = await createTestFeed('nats_stream')
  nc = await connect({ servers: TEST_NATS_URL })
  stream = await feedStream(nc, { stream: feed.stream, subjectPrefix: feed.prefix })
  await stream.ensure()
})
afterAll(async () => {
  await nc.close()
  await feed.drop()
})

test('the tail of an empty stream is the start of the log; after publishing, the last position', async () => {
  expect(await stream.readTail()).toEqual({ sequence: 0, position: 0n })
  const published = await stream.publish([message(1), message(2), message(3)], await stream.readTail())
  expect(published.failure).toBeUndefined()
  expect(published.published).toBe(3)
  expect(await stream.readTail()).toEqual({ sequence: 3, position: 3n })
})

test('a stale publisher adds nothing: a new message is refused, a duplicate in the wrong place is stale', async () => {
  // given: the stream holds 1, 2, 3; a publisher believes it ends after 1
  const stale = { sequence: 1, position: 1n }
  // when it publishes a new message, then a message already there but at another sequence
  const refused = await stream.publish([message(4)], stale)
  const duplicate = await stream.publish([message(3)], stale)
  // then
  expect(refused.published).toBe(0)
  expect(String(refused.failure)).toContain('wrong last sequence')
  expect(duplicate.failure).toBeInstanceOf(StaleTail)
  expect(positionsOf(await feed.read())).toEqual(['1', '2', '3'])
})

test('the tail is the last message whatever its subject: a notice after the plants of two owners', async () => {
  const before = await stream.readTail()
  const notice = { ...message(6), subject: `${feed.prefix}.events.OwnerErased` }
  const published = await stream.publish(
    [{ ...message(5), subject: plantSubject(feed.prefix, 'p2') }, notice],
    before,
  )
  expect(published.failure).toBeUndefined()
  expect(await stream.readTail()).toEqual({ sequence: before.sequence + 2, position: 6n })
})

test('a stream that does not cover the feed is refused naming EVENTS_NATS_STREAM', async () => {
  const other = await createTestFeed('nats_stream_other')
  await other.create({ subjects: [`${other.prefix}.events.PlantCreated`] })
  const refused = (await feedStream(nc, { stream: other.stream, subjectPrefix: other.prefix })).ensure()
  await expect(refused).rejects.toThrow('EVENTS_NATS_STREAM')
  await other.drop()
})
