import { describe, expect, test } from 'bun:test'
import { aborted, pause, unlessAborted } from '../../src/feed/abort.ts'

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

describe('waiting on abort signals', () => {
  test('aborted resolves when any signal aborts, and leaves no listener on the others', async () => {
    const long = counted(new AbortController().signal)
    for (let round = 0; round < 100; round++) {
      const short = new AbortController()
      const waiting = aborted(long.signal, short.signal)
      short.abort()
      await waiting
    }
    expect(long.listeners()).toBe(0)
  })

  test('aborted resolves at once for a signal aborted already', async () => {
    const waiting = aborted(AbortSignal.abort(), new AbortController().signal)
    expect(await Promise.race([waiting.then(() => 'resolved'), Bun.sleep(50).then(() => 'pending')])).toBe(
      'resolved',
    )
  })

  test('unlessAborted gives the value, or undefined when the signal aborts first', async () => {
    expect(await unlessAborted(Promise.resolve(7), AbortSignal.timeout(1000))).toBe(7)
    const never = new Promise<number>(() => {})
    expect(await unlessAborted(never, AbortSignal.timeout(20))).toBeUndefined()
    await expect(unlessAborted(Promise.reject(new Error('boom')), AbortSignal.timeout(1000))).rejects.toThrow(
      'boom',
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
})
