import type { Horizon } from '../event-log/horizon.ts'
import type { LoggedEvent } from '../event-log/reading.ts'

// Where the log follower stands, and the pure steps that move it (follower/follower.ts does the
// reads and hands out what these decide). Horizons probed and not yet settled wait in `pending`;
// `settled` is the highest position below which nothing can commit any more.
//  - starting: nothing handed out yet; it waits for the first horizon it probed to settle, and
//    stands there: nothing before it is handed out, only what follows it.
//  - standing: every event up to `position` has been handed out.
export type FollowerState =
  | { phase: 'starting'; settled: bigint; pending: Horizon[] }
  | { phase: 'standing'; position: bigint; settled: bigint; pending: Horizon[] }

// Horizons probed and not yet settled: more wait for these first (a long transaction holds them).
export const MAX_PENDING = 8
// How soon a horizon still waiting on a writer is looked at again.
export const SETTLE_RETRY_MS = 20

// Below every position (the first is 1), so that even an empty log's horizon is taken. A parked
// follower starts from here again.
export const startingState = (): FollowerState => ({ phase: 'starting', settled: -1n, pending: [] })

export const positionOf = (state: FollowerState): bigint | undefined =>
  state.phase === 'standing' ? state.position : undefined

// A probe is made when the loop asks for one (not right after a full batch: more is there without
// one), unless too many horizons already wait.
export const wantsProbe = (state: FollowerState, loop: LoopState): boolean =>
  loop.probe && state.pending.length < MAX_PENDING

// A probed horizon waits to settle, unless it is no further than what is settled or waits already.
// Undefined: a writer was caught between drawing a position and its transaction id; none is taken.
export function withHorizon(state: FollowerState, horizon: Horizon | undefined): FollowerState {
  const highest = state.pending.at(-1)?.position ?? state.settled
  if (horizon === undefined || horizon.position <= highest) return state
  return { ...state, pending: [...state.pending, horizon] }
}

// The read of the settled log the state asks for (event-log/reading.ts readSettledEvents), or
// none: starting with no horizon probed yet. Starting, the read takes no event; it only settles.
export type LogRead = { after: bigint; settled: bigint; horizons: Horizon[]; batchSize: number }

export function nextRead(state: FollowerState, batchSize: number): LogRead | undefined {
  if (state.phase === 'standing') {
    return { after: state.position, settled: state.settled, horizons: state.pending, batchSize }
  }
  const first = state.pending[0]
  if (first === undefined) return undefined
  return { after: first.position, settled: state.settled, horizons: [first], batchSize: 0 }
}

// Where a read left the follower; `moved` when its position moved on, with the events to hand out
// (none when it starts: it stands at its first horizon).
export type AfterRead = { state: FollowerState; moved?: LoggedEvent[] }

export function afterRead(
  state: FollowerState,
  read: { events: LoggedEvent[]; settled: bigint },
  batchSize: number,
): AfterRead {
  const settled = read.settled
  const pending = state.pending.filter((horizon) => horizon.position > settled)
  if (state.phase === 'starting') {
    const first = state.pending[0]
    if (first === undefined || settled < first.position) return { state: { ...state, settled } }
    return { state: { phase: 'standing', position: first.position, settled, pending }, moved: [] }
  }
  const full = read.events.length === batchSize
  const to = full ? (read.events.at(-1)?.position ?? state.position) : settled
  if (to <= state.position) return { state: { ...state, settled, pending } }
  return { state: { phase: 'standing', position: to, settled, pending }, moved: read.events }
}

// The loop around the reads: whether the last read failed (the recovery is logged once), and whether
// the next read probes the horizon (not right after a full batch).
export type LoopState = { failing: boolean; probe: boolean }

export const firstLoop = (): LoopState => ({ failing: false, probe: true })

// A read that took `count` events; `recovered` when it ends a run of failures.
export function afterSuccess(loop: LoopState, count: number, batchSize: number) {
  return { loop: { failing: false, probe: count < batchSize }, recovered: loop.failing }
}

// A failed read; `first` when it begins a run of failures.
export function afterFailure(loop: LoopState) {
  return { loop: { failing: true, probe: true }, first: !loop.failing }
}

// Parked and held again, the follower starts as at first: with a probe.
export const afterPark = (loop: LoopState): LoopState => ({ ...loop, probe: true })

// How long the loop rests before its next read, or undefined: read again at once (a full batch
// was read, more is there). A horizon still settling is looked at again soon; after a failure,
// the database is left alone longer.
export function restMs(state: FollowerState, loop: LoopState, pollMs: number): number | undefined {
  if (loop.failing) return pollMs * 5
  if (!loop.probe) return undefined
  return state.pending.length > 0 || state.phase === 'starting' ? SETTLE_RETRY_MS : pollMs
}
