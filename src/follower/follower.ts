import type { Keyring } from '../crypto/keyring.ts'
import type { Executor } from '../database/database.ts'
import { type Horizon, probeHorizon } from '../event-log/horizon.ts'
import { type LoggedEvent, readSettledEvents } from '../event-log/reading.ts'
import type { Logger } from '../shared/logger.ts'
import { advanceWaiters, followerHolds, wakeups } from './follower-signals.ts'
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

// Horizons probed and not yet settled: more wait for these first (a long transaction holds them).
const MAX_PENDING = 8
// How soon a horizon still waiting on a writer is looked at again.
const SETTLE_RETRY_MS = 20

// The one reader of the log in this process, which the feed and the change streams consume. Each
// wake-up (a create here, another instance's notice, a poll) is one probe of the horizon and one
// read of the settled log after where it stands (event-log/horizon.ts): every event once, in position
// order, never one that a transaction still running could precede. It starts at the log's
// horizon when it starts; consumers read what came before (`eventsAfter`, the projection).
// With `idleAfterMs`, it starts when first held and stops reading once nobody has held it for that
// long; held again, it starts afresh at the horizon of then, as at its first start: events between
// were handed to nobody, since nobody held it.
// A failed read is retried until the database answers again, on whichever server it then reaches.
export function runLogFollower({
  db,
  keyring,
  logger,
  pollMs = 200,
  gatherMs = 10,
  batchSize = 1000,
  recentEvents: keep = batchSize,
  idleAfterMs,
}: LogFollowerDeps) {
  // Every event up to `position` has been handed out; undefined until the start has settled.
  let position: bigint | undefined
  // Below every position (the first is 1), so that even an empty log's horizon is taken.
  let settled = -1n
  let pending: Horizon[] = []
  const recent = recentEvents(keep)
  const subscribers = new Set<(events: LoggedEvent[]) => void>()
  const waiters = advanceWaiters()
  const holds = followerHolds(idleAfterMs)
  const wakeup = wakeups()
  let readyResolve = () => {}
  let ready = new Promise<void>((resolve) => (readyResolve = resolve))
  // `ready` has resolved.
  let standing = false
  let stopped = false
  let reads = 0

  const advance = (events: LoggedEvent[], to: bigint) => {
    if (events.length > 0) {
      recent.add(events)
      for (const subscriber of subscribers) subscriber(events)
    }
    position = to
    waiters.notify()
  }

  // The start: nothing before the first horizon is handed out, only what follows it.
  const start = async () => {
    const first = pending[0]
    if (first === undefined) return
    const read = await readSettledEvents(db, keyring, first.position, settled, [first], 0)
    reads++
    settled = read.settled
    if (settled < first.position) return
    pending = pending.filter((horizon) => horizon.position > settled)
    recent.startAt(first.position)
    advance([], first.position)
    standing = true
    readyResolve()
  }

  // One probe of the horizon (unless a full batch was just read) and one read after `position`;
  // how many events it read.
  const step = async (probe: boolean): Promise<number> => {
    if (probe && pending.length < MAX_PENDING) {
      const horizon = await probeHorizon(db)
      const highest = pending.at(-1)?.position ?? settled
      if (horizon && horizon.position > highest) pending.push(horizon)
    }
    if (position === undefined) {
      await start()
      return 0
    }
    const read = await readSettledEvents(db, keyring, position, settled, pending, batchSize)
    reads++
    settled = read.settled
    pending = pending.filter((horizon) => horizon.position > settled)
    const full = read.events.length === batchSize
    const to = full ? (read.events.at(-1)?.position ?? position) : settled
    if (to > position) advance(read.events, to)
    return read.events.length
  }

  // Stands nowhere, reading nothing, until held; then starts as at first.
  const park = async () => {
    position = undefined
    settled = -1n
    pending = []
    recent.startAt(0n)
    if (standing) {
      standing = false
      ready = new Promise<void>((resolve) => (readyResolve = resolve))
    }
    await holds.untilHeld(() => stopped)
  }

  const run = async () => {
    let failing = false
    let probe = true
    while (!stopped) {
      if (holds.idle()) {
        await park()
        probe = true
        continue
      }
      wakeup.clear()
      try {
        const count = await step(probe)
        if (failing) logger.info('the log follower reads the log again')
        failing = false
        probe = count < batchSize
        if (!probe) continue
        await wakeup.rest(pending.length > 0 || position === undefined ? SETTLE_RETRY_MS : pollMs)
      } catch (error) {
        if (!failing) logger.warn({ err: error }, 'the log follower cannot read the log; retrying')
        failing = true
        probe = true
        await wakeup.rest(pollMs * 5)
      }
      await new Promise((resolve) => setTimeout(resolve, gatherMs))
    }
  }
  const running = run()

  // Up to `count` events after `after` and at or below position(), in position order, as a read
  // of the log now gives them (fewer than `count`: there are no more): from the latest events
  // kept, their owners' keys read again, or else read from the log.
  const eventsAfter = async (after: bigint, count: number): Promise<LoggedEvent[]> => {
    await ready
    const upTo = position
    if (upTo === undefined) return []
    if (after >= upTo) return []
    if (after >= recent.from()) return keptAsReadNow(db, recent.after(after), count)
    return (await readSettledEvents(db, keyring, after, upTo, [], count)).events
  }

  return {
    // Resolves once the follower stands somewhere (position() is defined). With `idleAfterMs`,
    // only once held: hold first.
    ready: () => ready,
    // The follower reads the log while held; the returned function ends the hold (once).
    hold: holds.hold,
    // Every event up to here has been handed to the subscribers; undefined before `ready`.
    position: () => position,
    // Called with every batch read from now on, in position order.
    subscribe: (onEvents: (events: LoggedEvent[]) => void) => {
      subscribers.add(onEvents)
      return () => {
        subscribers.delete(onEvents)
      }
    },
    eventsAfter,
    // Resolves when the follower next moves on, or after `ms`, or when `signal` aborts.
    advanced: waiters.next,
    // Something may have been appended: read the log now rather than at the next poll.
    wake: wakeup.wake,
    // How many reads of the log the loop has made (its catch-up reads for consumers aside).
    reads: () => reads,
    stop: async () => {
      stopped = true
      wakeup.wake()
      holds.release()
      await running
      readyResolve()
      waiters.notify()
    },
  }
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
