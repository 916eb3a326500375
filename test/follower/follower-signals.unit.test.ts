import { expect, test } from 'bun:test'
import { advanceWaiters, followerHolds, readiness, wakeups } from '../../src/follower/follower-signals.ts'

test('given a wake during a read, when the loop rests, then the rest ends at once', async () => {
  const wakeup = wakeups()
  wakeup.clear()
  wakeup.wake()
  const rested = wakeup.rest(60_000).then(() => 'ended')
  expect(await Promise.race([rested, Bun.sleep(5_000).then(() => 'resting')])).toBe('ended')
})

test('given a rest, when a wake comes, then it ends; a wake before the read counts no more', async () => {
  const wakeup = wakeups()
  wakeup.wake()
  wakeup.clear()
  let ended = false
  const resting = wakeup.rest(60_000).then(() => {
    ended = true
  })
  await Bun.sleep(5)
  expect(ended).toBe(false)
  wakeup.wake()
  await resting
  expect(ended).toBe(true)
})

test('given consumers waiting, when the follower moves on, then each resolves; an abort resolves one alone', async () => {
  const waiters = advanceWaiters()
  const order: string[] = []
  const aborting = new AbortController()
  const first = waiters.next(60_000).then(() => order.push('first'))
  const aborted = waiters.next(60_000, aborting.signal).then(() => order.push('aborted'))
  aborting.abort()
  await aborted
  waiters.notify()
  await first
  expect(order).toEqual(['aborted', 'first'])
})

test('given no idle time, then the follower is never idle', () => {
  expect(followerHolds(undefined).idle()).toBe(false)
})

test('given an idle time, when held and then released, then it reads on until that time has passed', async () => {
  const holds = followerHolds(500)
  expect(holds.idle()).toBe(true)
  const release = holds.hold()
  expect(holds.idle()).toBe(false)
  release()
  release()
  expect(holds.idle()).toBe(false)
  await Bun.sleep(600)
  expect(holds.idle()).toBe(true)
})

test('given an idle follower waiting to be held, when held, then its wait ends', async () => {
  const holds = followerHolds(0)
  const waiting = holds.untilHeld(() => false)
  holds.hold()
  await waiting
  expect(holds.idle()).toBe(false)
})

const settledWithin = (promise: Promise<void>) =>
  Promise.race([promise.then(() => 'ready'), Bun.sleep(20).then(() => 'waiting')])

test('given a follower not yet standing, when it stands, then ready resolves; parked, it waits again', async () => {
  const ready = readiness()
  expect(await settledWithin(ready.ready())).toBe('waiting')
  ready.stand()
  expect(await settledWithin(ready.ready())).toBe('ready')
  ready.park()
  expect(await settledWithin(ready.ready())).toBe('waiting')
  ready.stand()
  expect(await settledWithin(ready.ready())).toBe('ready')
})

test('given a follower that never stood, when parked and then stopped, then the first wait resolves', async () => {
  const ready = readiness()
  const waiting = ready.ready()
  ready.park()
  ready.release()
  expect(await settledWithin(waiting)).toBe('ready')
})
