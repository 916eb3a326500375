import type { Keyring } from '../keys/keyring.ts'
import type { Logger } from '../shared/logger.ts'
import type { Executor } from '../store/database.ts'
import { type Horizon, probeHorizon } from './horizon.ts'
import { asReadNow } from './kept-events.ts'
import { postgresNotices } from './notices.ts'
import { type LoggedEvent, readSettledEvents } from './reading.ts'

export type LogFollowerDeps = {
  // Where the log is read: the primary, or a replica of it.
  db: Executor
  // Opens the events read (keys/keyring.ts).
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
  // What is kept is handed out only as a read would give it then (log/kept-events.ts).
  recentEvents?: number
  // Read only while held (`hold`), and for this long after the last hold ends: with nobody to
  // hand events to, the log is not read at all. Undefined: read always.
  idleAfterMs?: number
}

export type LogFollower = ReturnType<typeof startLogFollower>

// Horizons probed and not yet settled: more wait for these first (a long transaction holds them).
const MAX_PENDING = 8
// How soon a horizon still waiting on a writer is looked at again.
const SETTLE_RETRY_MS = 20

// The one reader of the log in this process, which the feed and the change streams consume. Each
// wake-up (a create here, another instance's notice, a poll) is one probe of the horizon and one
// read of the settled log after where it stands (log/horizon.ts): every event once, in position
// order, never one that a transaction still running could precede. It starts at the log's
// horizon when it starts; consumers read what came before (`eventsAfter`, the projection).
// With `idleAfterMs`, it starts when first held and stops reading once nobody has held it for that
// long; held again, it starts afresh at the horizon of then, as at its first start: events between
// were handed to nobody, since nobody held it.
// A failed read is retried until the database answers again, on whichever server it then reaches.
export function startLogFollower({
  db,
  keyring,
  logger,
  pollMs = 200,
  gatherMs = 10,
  batchSize = 1000,
  recentEvents = batchSize,
  idleAfterMs,
}: LogFollowerDeps) {
  // Every event up to `position` has been handed out; undefined until the start has settled.
  let position: bigint | undefined
  // Below every position (the first is 1), so that even an empty log's horizon is taken.
  let settled = -1n
  let pending: Horizon[] = []
  // The latest events read, and the position just below them: they are every event in
  // (recentFrom, position].
  let recent: LoggedEvent[] = []
  let recentFrom = 0n
  const subscribers = new Set<(events: LoggedEvent[]) => void>()
  const advancedWaiters = new Set<() => void>()
  let readyResolve = () => {}
  let ready = new Promise<void>((resolve) => (readyResolve = resolve))
  // `ready` has resolved.
  let standing = false
  // Holds taken and not yet released, and until when the follower reads after the last one ended.
  let holds = 0
  let readsUntil = 0
  let demanded = () => {}
  let stopped = false
  let woken = false
  let rouse = () => {}
  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopped) return resolve()
      const timer = setTimeout(resolve, ms)
      rouse = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  const wake = () => {
    woken = true
    rouse()
  }
  let reads = 0

  const advance = (events: LoggedEvent[], to: bigint) => {
    if (events.length > 0) {
      recent.push(...events)
      forgetErased(events)
      if (recent.length > recentEvents) {
        const dropped = recent.splice(0, recent.length - recentEvents)
        recentFrom = dropped.at(-1)?.position ?? recentFrom
      }
      for (const subscriber of subscribers) subscriber(events)
    }
    position = to
    for (const waiter of [...advancedWaiters]) waiter()
  }

  // An owner whose erasure has begun is not kept any longer than it takes to read the notice.
  const forgetErased = (events: LoggedEvent[]) => {
    const erased = new Set(events.filter((event) => event.type === 'OwnerErased').map(pseudonymOf))
    if (erased.size > 0)
      recent = recent.filter((event) => event.type !== 'PlantCreated' || !erased.has(pseudonymOf(event)))
  }

  const step = async (probe: boolean): Promise<number> => {
    if (probe && pending.length < MAX_PENDING) {
      const horizon = await probeHorizon(db)
      const highest = pending.at(-1)?.position ?? settled
      if (horizon && horizon.position > highest) pending.push(horizon)
    }
    if (position === undefined) {
      // The start: nothing before the first horizon is handed out, only what follows it.
      const first = pending[0]
      if (first === undefined) return 0
      const read = await readSettledEvents(db, keyring, first.position, settled, [first], 0)
      reads++
      settled = read.settled
      if (settled < first.position) return 0
      pending = pending.filter((horizon) => horizon.position > settled)
      recentFrom = first.position
      advance([], first.position)
      standing = true
      readyResolve()
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

  const idle = () => idleAfterMs !== undefined && holds === 0 && Date.now() >= readsUntil
  // Stands nowhere, reading nothing, until held; then starts as at first.
  const park = async () => {
    position = undefined
    settled = -1n
    pending = []
    recent = []
    recentFrom = 0n
    if (standing) {
      standing = false
      ready = new Promise<void>((resolve) => (readyResolve = resolve))
    }
    await new Promise<void>((resolve) => {
      demanded = resolve
      if (!idle() || stopped) resolve()
    })
  }

  const run = async () => {
    let failing = false
    let probe = true
    while (!stopped) {
      if (idle()) {
        await park()
        probe = true
        continue
      }
      woken = false
      try {
        const count = await step(probe)
        if (failing) logger.info('the log follower reads the log again')
        failing = false
        probe = count < batchSize
        if (!probe) continue
        await rest(pending.length > 0 || position === undefined ? SETTLE_RETRY_MS : pollMs)
      } catch (error) {
        if (!failing) logger.warn({ err: error }, 'the log follower cannot read the log; retrying')
        failing = true
        probe = true
        await rest(pollMs * 5)
      }
      await new Promise((resolve) => setTimeout(resolve, gatherMs))
    }
  }
  const running = run()

  return {
    // Resolves once the follower stands somewhere (position() is defined). With `idleAfterMs`,
    // only once held: hold first.
    ready: () => ready,
    // The follower reads the log while held; the returned function ends the hold (once).
    hold: () => {
      holds++
      demanded()
      let held = true
      return () => {
        if (!held) return
        held = false
        holds--
        if (holds === 0) readsUntil = Date.now() + (idleAfterMs ?? 0)
      }
    },
    // Every event up to here has been handed to the subscribers; undefined before `ready`.
    position: () => position,
    // Called with every batch read from now on, in position order.
    subscribe: (onEvents: (events: LoggedEvent[]) => void) => {
      subscribers.add(onEvents)
      return () => {
        subscribers.delete(onEvents)
      }
    },
    // Up to `count` events after `after` and at or below position(), in position order, as a
    // read of the log now gives them (fewer than `count`: there are no more): from the latest
    // events kept, their owners' keys read again, or else read from the log.
    eventsAfter: async (after: bigint, count: number): Promise<LoggedEvent[]> => {
      await ready
      const upTo = position
      if (upTo === undefined) return []
      if (after >= upTo) return []
      if (after >= recentFrom) {
        const kept = recent.slice(firstAbove(recent, after))
        const found: LoggedEvent[] = []
        for (let start = 0; found.length < count && start < kept.length; ) {
          const slice = kept.slice(start, start + count - found.length)
          start += slice.length
          found.push(...(await asReadNow(db, slice)))
        }
        return found
      }
      return (await readSettledEvents(db, keyring, after, upTo, [], count)).events
    },
    // Resolves when the follower next moves on, or after `ms`, or when `signal` aborts.
    advanced: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', done)
          advancedWaiters.delete(done)
          resolve()
        }
        const timer = setTimeout(done, ms)
        signal?.addEventListener('abort', done)
        advancedWaiters.add(done)
      }),
    // Something may have been appended: read the log now rather than at the next poll.
    wake,
    // How many reads of the log the loop has made (its catch-up reads for consumers aside).
    reads: () => reads,
    stop: async () => {
      stopped = true
      wake()
      demanded()
      await running
      readyResolve()
      for (const waiter of [...advancedWaiters]) waiter()
    },
  }
}

const pseudonymOf = (event: LoggedEvent) => event.metadata.pseudonym

// The index of the first event above `position` (events in position order).
function firstAbove(events: LoggedEvent[], position: bigint): number {
  let low = 0
  let high = events.length
  while (low < high) {
    const middle = (low + high) >> 1
    if ((events[middle]?.position ?? 0n) <= position) low = middle + 1
    else high = middle
  }
  return low
}

export type FollowLogDeps = LogFollowerDeps & {
  // PostgreSQL: the database where instances notify each other of appends (the primary). Absent
  // (the embedded store, which one process holds): this process's own appends are all there is.
  noticesUrl?: string
}

export type FollowedLog = LogFollower & {
  // This process appended events: followers here and elsewhere read the log now.
  appended: () => void
  close: () => Promise<void>
}

// The process's follower, woken by its own appends and by other instances' notices.
export function followLog({ noticesUrl, ...deps }: FollowLogDeps): FollowedLog {
  const follower = startLogFollower(deps)
  const notices = noticesUrl
    ? postgresNotices({ url: noticesUrl, logger: deps.logger, onNotice: follower.wake })
    : undefined
  return {
    ...follower,
    appended: () => {
      follower.wake()
      notices?.notify()
    },
    close: async () => {
      await follower.stop()
      await notices?.close()
    },
  }
}
