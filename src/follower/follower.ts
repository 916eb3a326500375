import type { Keyring } from '../crypto/keyring.ts'
import type { Executor } from '../database/database.ts'
import { probeHorizon } from '../event-log/horizon.ts'
import { type LoggedEvent, readSettledEvents } from '../event-log/reading.ts'
import type { Logger } from '../shared/logger.ts'
import { advanceWaiters, followerHolds, readiness, wakeups } from './follower-signals.ts'
import {
  type AfterRead,
  afterFailure,
  afterPark,
  afterRead,
  afterSuccess,
  firstLoop,
  nextRead,
  positionOf,
  restMs,
  startingState,
  wantsProbe,
  withHorizon,
} from './follower-state.ts'
import { asReadNow } from './kept-events.ts'
import { recentEvents } from './recent-events.ts'

export type LogFollowerDeps = {
  // Where the log is read: the primary, or a replica of it.
  db: Executor
  // Opens the events read (crypto/keyring.ts).
  keyring: Keyring
  logger: Logger
  // How often the log is read when nothing woke the follower: another instance's writes, an import.
  pollMs?: number
  // The least time between two reads: under a stream of creates, wakes gather into one read.
  gatherMs?: number
  batchSize?: number
  // How many of the latest events are kept for a consumer a little behind (the feed after a
  // publish round), so that it need not read the log again. One batch: events of long names are
  // large in memory (docs/architecture.md, Design notes).
  // What is kept is handed out only as a read would give it then (follower/kept-events.ts).
  recentEvents?: number
  // Read only while held (`hold`), and for this long after the last hold ends: with nobody to
  // hand events to, the log is not read at all. Undefined: read always.
  idleAfterMs?: number
}

export type LogFollower = ReturnType<typeof runLogFollower>

// The one reader of the log in this process, which the feed and the change streams consume. Each
// wake-up (a create here, another instance's notice, a poll) is one probe of the horizon and one
// read of the settled log after where it stands (event-log/horizon.ts): every event once, in position
// order, never one that a transaction still running could precede. It starts at the log's
// horizon when it starts; consumers read what came before (`eventsAfter`, the projection).
// With `idleAfterMs`, it starts when first held and stops reading once nobody has held it for that
// long; held again, it starts afresh at the horizon of then, as at its first start: events between
// were handed to nobody, since nobody held it.
// A failed read is retried until the database answers again, on whichever server it then reaches.
// Where it stands, and how it moves, is follower/follower-state.ts; here are the reads and signals.
export function runLogFollower(deps: LogFollowerDeps) {
  const follower = followerParts(deps)
  const running = readUntilStopped(follower)
  return {
    // Resolves once the follower stands somewhere (position() is defined). With `idleAfterMs`,
    // only once held: hold first.
    ready: follower.readiness.ready,
    // The follower reads the log while held; the returned function ends the hold (once).
    hold: follower.holds.hold,
    // Every event up to here has been handed to the subscribers; undefined before `ready`.
    position: () => positionOf(follower.state),
    // Called with every batch read from now on, in position order.
    subscribe: (onEvents: (events: LoggedEvent[]) => void) => {
      follower.subscribers.add(onEvents)
      return () => {
        follower.subscribers.delete(onEvents)
      }
    },
    eventsAfter: (after: bigint, count: number) => eventsAfter(follower, after, count),
    // Resolves when the follower next moves on, or after `ms`, or when `signal` aborts.
    advanced: follower.waiters.next,
    // Something may have been appended: read the log now rather than at the next poll.
    wake: follower.wakeup.wake,
    // How many reads of the log the loop has made (its catch-up reads for consumers aside).
    reads: () => follower.reads,
    stop: async () => {
      follower.stopped = true
      follower.wakeup.wake()
      follower.holds.release()
      await running
      follower.readiness.release()
      follower.waiters.notify()
    },
  }
}

// What the follower's loop works with: its settings, where it stands (`state`, `loop`), and the
// signals to those who wait on it.
type Follower = ReturnType<typeof followerParts>

function followerParts({
  db,
  keyring,
  logger,
  pollMs = 200,
  gatherMs = 10,
  batchSize = 1000,
  recentEvents: keep = batchSize,
  idleAfterMs,
}: LogFollowerDeps) {
  return {
    db,
    keyring,
    logger,
    pollMs,
    gatherMs,
    batchSize,
    state: startingState(),
    loop: firstLoop(),
    stopped: false,
    reads: 0,
    recent: recentEvents(keep),
    subscribers: new Set<(events: LoggedEvent[]) => void>(),
    waiters: advanceWaiters(),
    holds: followerHolds(idleAfterMs),
    wakeup: wakeups(),
    readiness: readiness(),
  }
}

// Reads until stopped: parked while nobody holds it, resting between reads unless a full batch
// was just read, and gathering wakes that come close together into one read.
async function readUntilStopped(follower: Follower) {
  while (!follower.stopped) {
    if (follower.holds.idle()) {
      await park(follower)
      continue
    }
    follower.wakeup.clear()
    await readOrRetry(follower)
    const rest = restMs(follower.state, follower.loop, follower.pollMs)
    if (rest === undefined) continue
    await follower.wakeup.rest(rest)
    await new Promise((resolve) => setTimeout(resolve, follower.gatherMs))
  }
}

// One read; a failure is logged once, when it begins, and once more when the log reads again.
async function readOrRetry(follower: Follower) {
  try {
    const { loop, recovered } = afterSuccess(follower.loop, await readOnce(follower), follower.batchSize)
    if (recovered) follower.logger.info('the log follower reads the log again')
    follower.loop = loop
  } catch (error) {
    const { loop, first } = afterFailure(follower.loop)
    if (first) follower.logger.warn({ err: error }, 'the log follower cannot read the log; retrying')
    follower.loop = loop
  }
}

// One probe of the horizon (unless a full batch was just read) and one read of the settled log;
// how many events it read.
async function readOnce(follower: Follower): Promise<number> {
  if (wantsProbe(follower.state, follower.loop)) {
    follower.state = withHorizon(follower.state, await probeHorizon(follower.db))
  }
  const request = nextRead(follower.state, follower.batchSize)
  if (request === undefined) return 0
  const { after, settled, horizons, batchSize } = request
  const read = await readSettledEvents(follower.db, follower.keyring, after, settled, horizons, batchSize)
  follower.reads++
  advance(follower, afterRead(follower.state, read, follower.batchSize))
  return read.events.length
}

// Takes where a read left the follower. Events are handed out before the position moves past
// them; then those waiting on the follower are told, and, at the start, it is ready.
function advance(follower: Follower, { state, moved }: AfterRead) {
  const started = follower.state.phase === 'starting' && state.phase === 'standing'
  if (started) follower.recent.startAt(state.position)
  if (moved && moved.length > 0) {
    follower.recent.add(moved)
    for (const subscriber of follower.subscribers) subscriber(moved)
  }
  follower.state = state
  if (moved) follower.waiters.notify()
  if (started) follower.readiness.stand()
}

// Stands nowhere, reading nothing, until held; then starts as at first.
async function park(follower: Follower) {
  follower.state = startingState()
  follower.recent.startAt(0n)
  follower.readiness.park()
  await follower.holds.untilHeld(() => follower.stopped)
  follower.loop = afterPark(follower.loop)
}

// Up to `count` events after `after` and at or below position(), in position order, as a read
// of the log now gives them (fewer than `count`: there are no more): from the latest events
// kept, their owners' keys read again, or else read from the log.
async function eventsAfter(follower: Follower, after: bigint, count: number): Promise<LoggedEvent[]> {
  await follower.readiness.ready()
  const upTo = positionOf(follower.state)
  if (upTo === undefined || after >= upTo) return []
  if (after >= follower.recent.from()) return keptAsReadNow(follower.db, follower.recent.after(after), count)
  return (await readSettledEvents(follower.db, follower.keyring, after, upTo, [], count)).events
}

// Up to `count` of the kept events, as a read of the log now gives them.
async function keptAsReadNow(db: Executor, kept: LoggedEvent[], count: number): Promise<LoggedEvent[]> {
  const found: LoggedEvent[] = []
  for (let start = 0; found.length < count && start < kept.length; ) {
    const slice = kept.slice(start, start + count - found.length)
    start += slice.length
    found.push(...(await asReadNow(db, slice)))
  }
  return found
}

export type FollowedLog = LogFollower & {
  // This process appended events: its follower reads the log now.
  appended: () => void
  close: () => Promise<void>
}

// The process's follower, woken by its own appends. Other instances' appends are found by the
// poll: a wake-up between instances would need LISTEN, a session's state, which a transaction-mode
// pooler (PgBouncer) does not keep, and whose NOTIFYs it would hand to other clients.
export function followLog(deps: LogFollowerDeps): FollowedLog {
  const follower = runLogFollower(deps)
  return { ...follower, appended: follower.wake, close: follower.stop }
}
