import { describe, expect, test } from 'bun:test'
import {
  closedStream,
  fellBehind,
  isNew,
  isStalled,
  needsRead,
  offered,
  openedStream,
  overflowed,
  pulled,
  type StreamState,
  taken,
  wentLive,
} from '../../src/changes/stream-state.ts'

const live = (last: number, lastPullAt = 0): StreamState => ({
  phase: 'live',
  last: BigInt(last),
  behind: false,
  lastPullAt,
})

describe('a stream catching up', () => {
  test('given a stream just opened, then it catches up from before every position', () => {
    expect(openedStream(5)).toEqual({ phase: 'catchingUp', last: -1n, behind: false, lastPullAt: 5 })
  })

  test('given nothing queued, then a pull reads the database while catching up, and only then', () => {
    expect(needsRead(openedStream(0), 0)).toBe(true)
    expect(needsRead(openedStream(0), 1)).toBe(false)
    expect(needsRead(live(3), 0)).toBe(false)
    expect(needsRead(closedStream(openedStream(0)), 0)).toBe(false)
  })

  test('given a live event while catching up, then it is held', () => {
    expect(offered(openedStream(0), 9n)).toBe('hold')
  })

  test('given held events missed, then it falls behind', () => {
    expect(fellBehind(openedStream(0)).behind).toBe(true)
  })

  test('given caught up, then it goes live; closed meanwhile, it stays closed', () => {
    expect(wentLive(taken(openedStream(0), 4n))).toEqual(live(4))
    expect(wentLive(closedStream(openedStream(0))).phase).toBe('closed')
  })
})

describe('a live stream', () => {
  test('given an event above the last taken, then it is taken; at or below, it is a duplicate', () => {
    expect(offered(live(4), 5n)).toBe('take')
    expect(offered(live(4), 4n)).toBe('skip')
    expect(isNew(live(4), 5n)).toBe(true)
    expect(isNew(live(4), 3n)).toBe(false)
  })

  test('given a frame taken, then the last position moves there; a comment moves nothing', () => {
    expect(taken(live(4), 7n).last).toBe(7n)
    expect(taken(live(4), undefined)).toEqual(live(4))
  })

  test('given its queue past the bound and a client that pulled lately, then it catches up from what the client has', () => {
    expect(overflowed(live(9, 1000), 6n, 1500, 1000)).toEqual({
      phase: 'catchingUp',
      last: 6n,
      behind: true,
      lastPullAt: 1000,
    })
  })

  test('given its queue past the bound and a client that took nothing for stallMs, then it is stalled', () => {
    expect(overflowed(live(9, 1000), 6n, 2000, 1000)).toBe('stalled')
  })
})

describe('a client that stops reading', () => {
  test('given a stream behind, then it is stalled once stallMs pass without a pull', () => {
    const behind = fellBehind(live(4, 1000))
    expect(isStalled(behind, 1999, 1000)).toBe(false)
    expect(isStalled(behind, 2000, 1000)).toBe(true)
    expect(isStalled(live(4, 1000), 5000, 1000)).toBe(false)
  })

  test('given a stream behind, when the client pulls, then it is no longer behind', () => {
    expect(pulled(fellBehind(live(4, 1000)), 3000)).toEqual(live(4, 3000))
  })

  test('given a closed stream, then nothing is taken and it is never stalled', () => {
    const closed = closedStream(fellBehind(live(4, 0)))
    expect(closed.phase).toBe('closed')
    expect(offered(closed, 9n)).toBe('skip')
    expect(isStalled(closed, 10_000, 1000)).toBe(false)
  })
})
