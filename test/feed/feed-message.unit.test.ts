import { describe, expect, test } from 'bun:test'
import { toPublishedMessage } from '../../src/feed/cloud-event.ts'
import { subjectCovers } from '../../src/feed/nats-stream.ts'
import { logged, PSEUDONYM, settings } from './logged-event.ts'

describe('toPublishedMessage', () => {
  test('builds the CloudEvents message docs/feed.md describes, ids as decimal strings', () => {
    const message = toPublishedMessage(logged({}), settings)
    expect(message).toMatchObject({
      subject: `plant-store.events.PlantCreated.${PSEUDONYM}`,
      id: '12',
      transactionId: '7',
    })
    expect(message?.body).toBe(
      '{"specversion":"1.0","id":"12","source":"plant-store","type":"PlantCreated","subject":"9223372036854775807",' +
        '"time":"2026-01-02T03:04:05.678Z","datacontenttype":"application/json","owner":"alice",' +
        '"data":{"id":"9223372036854775807","name":"Max"}}',
    )
  })

  test('an empty tag is kept, distinct from no tag', () => {
    const body = JSON.parse(
      toPublishedMessage(logged({ data: { id: '1', name: 'n', tag: '' } }), settings)?.body ?? '',
    )
    expect(body.data).toEqual({ id: '1', name: 'n', tag: '' })
  })
})

describe('toPublishedMessage of an erasure', () => {
  const notice = (owner: string | null) =>
    logged({ type: 'OwnerErased', data: null, metadata: { owner, pseudonym: PSEUDONYM } })

  test("an OwnerErased in progress is a notice naming the owner, outside the plants' subjects", () => {
    const message = toPublishedMessage(notice('alice'), settings)
    expect(message).toMatchObject({ subject: 'plant-store.events.OwnerErased', id: '12', transactionId: '7' })
    expect(message?.body).toBe(
      '{"specversion":"1.0","id":"12","source":"plant-store","type":"OwnerErased",' +
        '"time":"2026-01-02T03:04:05.678Z","owner":"alice"}',
    )
  })

  test('an OwnerErased whose erasure has completed names no one and is not published', () => {
    expect(toPublishedMessage(notice(null), settings)).toBeUndefined()
  })

  test('a PlantCreated whose owner can no longer be read is not published', () => {
    expect(
      toPublishedMessage(logged({ metadata: { owner: null, pseudonym: PSEUDONYM } }), settings),
    ).toBeUndefined()
  })
})

describe('subjectCovers', () => {
  test.each([
    ['plant-store.events.>', true],
    ['plant-store.>', true],
    ['>', true],
    ['*.events.>', true],
    ['plant-store.events.*', false],
    ['plant-store.events.PlantCreated', false],
    ['other.events.>', false],
    ['plant-store.events', false],
  ])('%s covers plant-store.events.> : %p', (pattern, covers) => {
    expect(subjectCovers(pattern, 'plant-store.events.>')).toBe(covers)
  })
})
