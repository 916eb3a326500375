import { describe, expect, test } from 'bun:test'
import {
  afterFailure,
  afterPark,
  afterRead,
  afterSuccess,
  type FollowerState,
  firstLoop,
  MAX_PENDING,
  nextRead,
  positionOf,
  restMs,
  SETTLE_RETRY_MS,
  startingState,
  wantsProbe,
  withHorizon,
} from '../../src/follower/follower-state.ts'
import { logged } from '../feed/logged-event.ts'

const horizon = (position: number, newestWriter = 0) => ({
  position: BigInt(position),
  newestWriter: BigInt(newestWriter),
})
const standing = (position: number, settled: number, pending = [horizon(settled + 5)]): FollowerState => ({
  phase: 'standing',
  position: BigInt(position),
  settled: BigInt(settled),
  pending,
})
const events = (...positions: number[]) => positions.map((position) => logged({ position: BigInt(position) }))

describe('where the follower starts', () => {
  test('given a new follower, then it stands nowhere, below every position, with nothing pending', () => {
    const state = startingState()
    expect(state).toEqual({ phase: 'starting', settled: -1n, pending: [] })
    expect(positionOf(state)).toBeUndefined()
    expect(positionOf(standing(4, 4))).toBe(4n)
  })

  test('given no horizon probed yet, then there is nothing to read', () => {
    expect(nextRead(startingState(), 1000)).toBeUndefined()
  })

  test('given a horizon probed, then the start reads no event, only whether that horizon settled', () => {
    const state = withHorizon(startingState(), horizon(7, 3))
    expect(nextRead(state, 1000)).toEqual({
      after: 7n,
      settled: -1n,
      horizons: [horizon(7, 3)],
      batchSize: 0,
    })
  })

  test('given the first horizon not yet settled, when read, then it keeps starting, settled as far as read', () => {
    const state = withHorizon(startingState(), horizon(7))
    const { state: next, moved } = afterRead(state, { events: [], settled: 5n }, 1000)
    expect(next).toEqual({ phase: 'starting', settled: 5n, pending: [horizon(7)] })
    expect(moved).toBeUndefined()
  })

  test('given the first horizon settled, when read, then it stands there, handing out nothing before it', () => {
    const state: FollowerState = { phase: 'starting', settled: -1n, pending: [horizon(7), horizon(9)] }
    const { state: next, moved } = afterRead(state, { events: [], settled: 7n }, 1000)
    expect(next).toEqual({ phase: 'standing', position: 7n, settled: 7n, pending: [horizon(9)] })
    expect(moved).toEqual([])
  })
})

describe('a probe of the horizon', () => {
  test('given a horizon further than any pending, then it waits to settle', () => {
    const state = withHorizon(standing(4, 4, [horizon(6)]), horizon(8))
    expect(state.pending).toEqual([horizon(6), horizon(8)])
  })

  test('given a horizon no further than the last pending or settled, or none, then nothing changes', () => {
    const state = standing(4, 4, [horizon(6)])
    expect(withHorizon(state, horizon(6))).toBe(state)
    expect(withHorizon(standing(4, 4, []), horizon(4)).pending).toEqual([])
    expect(withHorizon(state, undefined)).toBe(state)
  })

  test('given the loop asks for a probe, then one is made unless too many horizons wait', () => {
    const many = Array.from({ length: MAX_PENDING }, (_, index) => horizon(10 + index))
    expect(wantsProbe(standing(4, 4), { failing: false, probe: true })).toBe(true)
    expect(wantsProbe(standing(4, 4), { failing: false, probe: false })).toBe(false)
    expect(wantsProbe(standing(4, 4, many), { failing: false, probe: true })).toBe(false)
  })
})

describe('a read while standing', () => {
  test('given a follower standing, then it reads a batch after its position, up to what waits', () => {
    expect(nextRead(standing(4, 4, [horizon(9)]), 3)).toEqual({
      after: 4n,
      settled: 4n,
      horizons: [horizon(9)],
      batchSize: 3,
    })
  })

  test('given fewer than a batch read, then it moves to the settled horizon and hands them out', () => {
    const { state, moved } = afterRead(
      standing(4, 4, [horizon(9), horizon(12)]),
      { events: events(5, 6), settled: 9n },
      3,
    )
    expect(state).toEqual(standing(9, 9, [horizon(12)]))
    expect(moved?.map(({ position }) => position)).toEqual([5n, 6n])
  })

  test('given a full batch, then it moves only to the last event read: more are below the horizon', () => {
    const { state, moved } = afterRead(
      standing(4, 4, [horizon(20)]),
      { events: events(5, 6, 7), settled: 20n },
      3,
    )
    expect(state).toEqual(standing(7, 20, []))
    expect(moved).toHaveLength(3)
  })

  test('given nothing settled past its position, then it stays, and hands out nothing', () => {
    const { state, moved } = afterRead(standing(4, 4, [horizon(9)]), { events: [], settled: 4n }, 3)
    expect(state).toEqual(standing(4, 4, [horizon(9)]))
    expect(moved).toBeUndefined()
  })
})

describe('the loop around the reads', () => {
  test('given a first loop, then it probes and is not failing', () => {
    expect(firstLoop()).toEqual({ failing: false, probe: true })
  })

  test('given a full batch read, then the next read comes at once, without a probe', () => {
    const { loop, recovered } = afterSuccess(firstLoop(), 3, 3)
    expect(loop).toEqual({ failing: false, probe: false })
    expect(recovered).toBe(false)
    expect(restMs(standing(4, 4), loop, 200)).toBeUndefined()
  })

  test('given a part batch, then it rests a poll, or briefly while a horizon settles or it starts', () => {
    const { loop } = afterSuccess(firstLoop(), 2, 3)
    expect(loop.probe).toBe(true)
    expect(restMs(standing(4, 4, []), loop, 200)).toBe(200)
    expect(restMs(standing(4, 4, [horizon(9)]), loop, 200)).toBe(SETTLE_RETRY_MS)
    expect(restMs(startingState(), loop, 200)).toBe(SETTLE_RETRY_MS)
  })

  test('given reads failing, then only the first failure and the recovery are told, and it rests longer', () => {
    const first = afterFailure(firstLoop())
    const second = afterFailure(first.loop)
    const recovery = afterSuccess(second.loop, 0, 3)
    expect([first.first, second.first, recovery.recovered]).toEqual([true, false, true])
    expect(second.loop).toEqual({ failing: true, probe: true })
    expect(restMs(standing(4, 4, []), second.loop, 200)).toBe(1000)
  })

  test('given a parked follower held again, then its next read probes', () => {
    expect(afterPark({ failing: true, probe: false })).toEqual({ failing: true, probe: true })
  })
})
