import type { LoggedEvent } from '../event-log/reading.ts'

// The latest events the follower read, kept for a consumer a little behind (the feed after a
// publish round) so that it need not read the log again. They are every event in (from(), the
// follower's position], at most `limit` of them.
export function recentEvents(limit: number) {
  let events: LoggedEvent[] = []
  let from = 0n
  return {
    from: () => from,
    // Nothing kept; what is added next follows `position`.
    startAt: (position: bigint) => {
      events = []
      from = position
    },
    add: (read: LoggedEvent[]) => {
      events.push(...read)
      events = withoutErased(events, read)
      if (events.length > limit) {
        const dropped = events.splice(0, events.length - limit)
        from = dropped.at(-1)?.position ?? from
      }
    },
    // The kept events above `position`, in position order.
    after: (position: bigint) => events.slice(firstAbove(events, position)),
  }
}

// An owner whose erasure has begun is not kept any longer than it takes to read the notice.
function withoutErased(events: LoggedEvent[], read: LoggedEvent[]): LoggedEvent[] {
  const erased = new Set(read.filter((event) => event.type === 'OwnerErased').map(pseudonymOf))
  if (erased.size === 0) return events
  return events.filter((event) => event.type !== 'PlantCreated' || !erased.has(pseudonymOf(event)))
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
