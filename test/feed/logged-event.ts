import type { LoggedEvent } from '../../src/event-log/reading.ts'

// A feed's settings, and an event of the log as the follower hands it to the feed, for the feed's
// unit tests: a PlantCreated of alice's unless `overrides` says otherwise.
export const settings = { subjectPrefix: 'plant-store', source: 'plant-store' }
export const PSEUDONYM = '0123456789abcdef0123456789abcdef'

export function logged(overrides: Partial<LoggedEvent>): LoggedEvent {
  return {
    transactionId: 7n,
    position: 12n,
    type: 'PlantCreated',
    schemaVersion: 1,
    metadata: { owner: 'alice', pseudonym: PSEUDONYM },
    recordedAt: new Date('2026-01-02T03:04:05.678Z'),
    time: '2026-01-02T03:04:05.678Z',
    data: { id: '9223372036854775807', name: 'Max', tag: null },
    ...overrides,
  }
}
