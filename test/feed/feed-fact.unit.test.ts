import { describe, expect, test } from 'bun:test'
import type { FeedConfig } from '../../src/config/config.ts'
import { feedToErase } from '../../src/feed/feed-fact.ts'

const configured: FeedConfig = {
  servers: ['nats://127.0.0.1:4222'],
  stream: 'PLANTS',
  subjectPrefix: 'shop.plants',
  source: 'plant-store',
  replicas: 1,
}

// Erasure (docs/erasure.md): an erasure follows the feed the store records, and only that.
describe('the feed an erasure works on', () => {
  test('the recorded one, reached with the configured servers', () => {
    expect(feedToErase({ stream: 'PLANTS', subjectPrefix: 'shop.plants' }, configured)).toBe(configured)
  })

  test('none for a store that never had a feed, whatever is configured', () => {
    expect(feedToErase(undefined, configured)).toBeUndefined()
    expect(feedToErase(undefined, undefined)).toBeUndefined()
  })

  test('a recorded feed and none configured: refused, naming the recorded one', () => {
    expect(() => feedToErase({ stream: 'PLANTS', subjectPrefix: 'shop.plants' }, undefined)).toThrow(
      'this store publishes its log to the NATS stream "PLANTS" on "shop.plants.events.>"; set EVENTS_NATS_URL',
    )
  })

  test('another stream or another prefix: refused, naming both', () => {
    const recorded = { stream: 'PLANTS', subjectPrefix: 'shop.plants' }
    expect(() => feedToErase(recorded, { ...configured, stream: 'OTHER' })).toThrow(
      'the NATS stream "PLANTS" on "shop.plants.events.>", not the NATS stream "OTHER" on "shop.plants.events.>"',
    )
    expect(() => feedToErase(recorded, { ...configured, subjectPrefix: 'wrong' })).toThrow(
      'the NATS stream "PLANTS" on "shop.plants.events.>", not the NATS stream "PLANTS" on "wrong.events.>"',
    )
  })

  test('a record of an earlier version names the stream alone: the stream is compared, the prefix is taken as configured', () => {
    expect(feedToErase({ stream: 'PLANTS' }, configured)).toBe(configured)
    expect(() => feedToErase({ stream: 'PLANTS' }, { ...configured, stream: 'OTHER' })).toThrow(
      'the NATS stream "PLANTS", not the NATS stream "OTHER" on "shop.plants.events.>"',
    )
  })
})
