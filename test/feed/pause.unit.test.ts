import { describe, expect, test } from 'bun:test'
import { soleLeadership } from '../../src/feed/leadership.ts'
import type { FeedStream } from '../../src/feed/nats-stream.ts'
import { pause, runRelay } from '../../src/feed/relay.ts'
import { createLogger } from '../../src/shared/logger.ts'

// Counts the abort listeners a signal holds, through its own public methods.
function counted(signal: AbortSignal): { signal: AbortSignal; listeners: () => number } {
  let listeners = 0
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = ((...args: Parameters<typeof add>) => {
    listeners++
    add(...args)
  }) as typeof signal.addEventListener
  signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
    listeners--
    remove(...args)
  }) as typeof signal.removeEventListener
  return { signal, listeners: () => listeners }
}

describe("the relay's waits", () => {
  test('a pause ended by any signal leaves no listener on the others', async () => {
    const long = counted(new AbortController().signal)
    for (let round = 0; round < 100; round++) {
      const short = new AbortController()
      const waiting = pause(10_000, long.signal, short.signal)
      short.abort()
      await waiting
    }
    expect(long.listeners()).toBe(0)
  })

  test('a pause ends at once for a signal aborted already', async () => {
    const waiting = pause(10_000, AbortSignal.abort(), new AbortController().signal)
    expect(await Promise.race([waiting.then(() => 'resolved'), Bun.sleep(50).then(() => 'pending')])).toBe(
      'resolved',
    )
  })

  test('pause waits its time, or less when a signal aborts', async () => {
    let started = performance.now()
    await pause(60)
    expect(performance.now() - started).toBeGreaterThanOrEqual(50)
    const stop = new AbortController()
    started = performance.now()
    setTimeout(() => stop.abort(), 10)
    await pause(10_000, stop.signal)
    expect(performance.now() - started).toBeLessThan(5000)
  })

  test('a relay still waiting for NATS stops at once', async () => {
    // given: a stream that never becomes reachable
    const relay = runRelay({
      follower: {
        eventsAfter: async () => [],
        advanced: async () => {},
        position: () => undefined,
        hold: () => () => {},
      },
      stream: new Promise<FeedStream>(() => {}),
      leadership: soleLeadership,
      messages: { subjectPrefix: 'plant-store', source: 'plant-store' },
      logger: createLogger('silent'),
    })
    // when
    const stopped = relay.stop().then(() => 'stopped')
    // then
    expect(await Promise.race([stopped, Bun.sleep(1000).then(() => 'waiting')])).toBe('stopped')
  })
})
