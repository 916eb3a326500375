import { afterEach, describe, expect, test } from 'bun:test'
import { type ChangeHub, createChangeHub } from '../../src/changes/change-hub.ts'
import { type ChangeStream, createChangeStream } from '../../src/changes/change-stream.ts'
import type { LoggedEvent } from '../../src/event-log/reading.ts'
import { silentLogger } from '../../src/shared/logger.ts'

const P1 = 'a'.repeat(32)
const P2 = 'b'.repeat(32)

function event(type: string, owner: string | null, pseudonym: string, position: bigint): LoggedEvent {
  return {
    transactionId: position,
    position,
    type,
    schemaVersion: 1,
    data: type === 'PlantCreated' ? { id: String(position), name: 'n', tag: null } : null,
    recordedAt: new Date(0),
    time: '1970-01-01T00:00:00.000Z',
    metadata: { owner, pseudonym },
  }
}

describe('the hub on an OwnerErased', () => {
  let hub: ChangeHub
  const ended = new Set<ChangeStream>()
  const open = (owner: string, pseudonym?: string) => {
    const stream = createChangeStream({
      owner,
      expiresAt: Number.MAX_SAFE_INTEGER,
      maxBufferedBytes: 1 << 20,
      stallMs: 60_000,
      now: Date.now,
      readAfter: async () => ({ frames: [], complete: true }),
      onClosed: (closed) => {
        ended.add(closed)
        hub.remove(closed)
      },
    })
    stream.pseudonym = pseudonym
    stream.startAfter(0n, true)
    expect(hub.add(stream)).toBe('added')
    return stream
  }
  afterEach(() => {
    hub.close()
    ended.clear()
  })

  test('naming the owner (erasure in progress): ends their streams of that key, and those whose key is not known yet', () => {
    hub = createChangeHub({ logger: silentLogger(), streamsPerOwner: 10 })
    const ofKey = open('ann', P1)
    const unknown = open('ann')
    const newOwner = open('ann', P2)
    const other = open('bob', P1.replace('a', 'c'))
    hub.deliver([event('OwnerErased', 'ann', P1, 10n)])
    expect([...ended]).toEqual([ofKey, unknown])
    expect(hub.count()).toBe(2)
    expect(ended.has(newOwner) || ended.has(other)).toBe(false)
  })

  test('naming no one (erasure completed): ends the streams that know the pseudonym, whoever they are', () => {
    hub = createChangeHub({ logger: silentLogger(), streamsPerOwner: 10 })
    const ofKey = open('ann', P1)
    const unknown = open('ann')
    const other = open('bob', P2)
    hub.deliver([event('OwnerErased', null, P1, 10n)])
    expect([...ended]).toEqual([ofKey])
    expect(ended.has(unknown) || ended.has(other)).toBe(false)
  })

  test("a stream opened before its owner had a key learns it from the owner's first plant", () => {
    hub = createChangeHub({ logger: silentLogger(), streamsPerOwner: 10 })
    const keyless = open('cem')
    const keyed = open('cem', P1)
    hub.deliver([event('PlantCreated', 'cem', P2, 5n)])
    expect(keyless.pseudonym).toBe(P2)
    expect(keyed.pseudonym).toBe(P1)
    hub.deliver([event('OwnerErased', null, P2, 6n)])
    expect([...ended]).toEqual([keyless])
  })
})
