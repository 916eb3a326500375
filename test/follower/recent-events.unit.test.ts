import { expect, test } from 'bun:test'
import type { LoggedEvent } from '../../src/event-log/reading.ts'
import { recentEvents } from '../../src/follower/recent-events.ts'

const event = (position: number, type = 'PlantCreated', pseudonym = 'p-ann'): LoggedEvent => ({
  transactionId: 1n,
  position: BigInt(position),
  type,
  schemaVersion: 1,
  data: {},
  recordedAt: new Date(0),
  time: '1970-01-01T00:00:00.000Z',
  metadata: { owner: null, pseudonym },
})
const positions = (events: LoggedEvent[]) => events.map(({ position }) => Number(position))

test('given a window of 3, when 5 events are added, then the latest 3 are kept and it starts below them', () => {
  const recent = recentEvents(3)
  recent.startAt(0n)
  recent.add([event(1), event(2)])
  recent.add([event(3), event(4), event(5)])
  expect(recent.from()).toBe(2n)
  expect(positions(recent.after(0n))).toEqual([3, 4, 5])
  expect(positions(recent.after(4n))).toEqual([5])
})

test("given an owner's plants kept, when their erasure's notice is read, then none of their plants is kept", () => {
  const recent = recentEvents(10)
  recent.startAt(0n)
  recent.add([event(1), event(2, 'PlantCreated', 'p-bob'), event(3)])
  recent.add([event(4, 'OwnerErased')])
  expect(positions(recent.after(0n))).toEqual([2, 4])
})

test('given events kept, when it starts again elsewhere, then nothing is kept', () => {
  const recent = recentEvents(10)
  recent.startAt(0n)
  recent.add([event(1), event(2)])
  recent.startAt(7n)
  expect(recent.from()).toBe(7n)
  expect(recent.after(0n)).toEqual([])
})
