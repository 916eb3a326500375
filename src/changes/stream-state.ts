// Where one client's change stream stands, and the pure steps that move it (changes/change-stream.ts
// queues, reads and hands out what these decide):
//  - catchingUp: each pull with nothing queued reads the next batch from the database; live events
//    are held meanwhile.
//  - live: live events are taken for the client as they come.
//  - closed: nothing more is taken.
export type StreamState = {
  phase: 'catchingUp' | 'live' | 'closed'
  // The newest position taken for the client, queued or handed out.
  last: bigint
  // Events were dropped since the client last pulled.
  behind: boolean
  lastPullAt: number
}

export const openedStream = (now: number): StreamState => ({
  phase: 'catchingUp',
  last: -1n,
  behind: false,
  lastPullAt: now,
})

// The client pulled: it reads, and what was dropped before is no longer held against it.
export const pulled = (state: StreamState, now: number): StreamState => ({
  ...state,
  lastPullAt: now,
  behind: false,
})

// Each pull with nothing queued reads the database, until the stream is live or closed.
export const needsRead = (state: StreamState, queued: number): boolean =>
  queued === 0 && state.phase === 'catchingUp'

// Positions of one owner's events only grow (create-plant.ts), so an event at or below the last
// position taken is a duplicate.
export const isNew = (state: StreamState, position: bigint): boolean => position > state.last

// A frame taken for the client (or the position the stream starts after); a comment has none.
// Written out rather than spread: this runs for every event on every stream, and a literal costs less.
export const taken = (state: StreamState, position: bigint | undefined): StreamState =>
  position === undefined
    ? state
    : { phase: state.phase, last: position, behind: state.behind, lastPullAt: state.lastPullAt }

// What becomes of a live event: held while the stream catches up, taken when new, else skipped.
export function offered(state: StreamState, position: bigint): 'hold' | 'take' | 'skip' {
  if (state.phase === 'closed') return 'skip'
  if (state.phase === 'catchingUp') return 'hold'
  return isNew(state, position) ? 'take' : 'skip'
}

// Events were dropped: the next read covers them, and a client that takes nothing is stalled.
export const fellBehind = (state: StreamState): StreamState => ({ ...state, behind: true })

// A client that took nothing for `stallMs` after its events passed the bound does not read.
export const isStalled = (state: StreamState, now: number, stallMs: number): boolean =>
  state.phase !== 'closed' && state.behind && now - state.lastPullAt >= stallMs

// Live events queued past the bound: a stalled client is reset; otherwise the queue is dropped and
// the stream catches up again from the last position the client was handed.
export function overflowed(
  state: StreamState,
  handedOut: bigint,
  now: number,
  stallMs: number,
): StreamState | 'stalled' {
  const behind = fellBehind(state)
  if (isStalled(behind, now, stallMs)) return 'stalled'
  return { ...behind, phase: 'catchingUp', last: handedOut }
}

// Caught up with nothing missed while it held live events: live from here, unless closed meanwhile.
export const wentLive = (state: StreamState): StreamState =>
  state.phase === 'closed' ? state : { ...state, phase: 'live' }

export const closedStream = (state: StreamState): StreamState => ({ ...state, phase: 'closed' })
