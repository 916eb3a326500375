import { drizzle } from 'drizzle-orm/postgres-js'
import { postgresClient } from '../database/postgres-client.ts'
import { type HeldLock, takeLock } from '../locks/advisory-lock.ts'
import { LOCKS } from '../locks/lock-registry.ts'
import { LOCK_SPACES } from '../locks/lock-spaces.ts'

// Whether this process is the one that publishes. Only an optimisation: a second publisher is
// refused by the stream (see nats-stream.ts), never duplicated; the lock keeps them from racing.
// Kept because it measured cheaper than two publishers racing (docs/performance.md, The event
// feed). What it costs: a follower asks once a second, one query for the leader, four for others.
export type Leadership = {
  isLeader: () => Promise<boolean>
  // Steps down, so that another instance (one that may reach NATS) can lead.
  release: () => Promise<void>
  close: () => Promise<void>
}

// The embedded store is opened by one process only, so that process leads.
export const soleLeadership: Leadership = {
  isLeader: async () => true,
  release: async () => {},
  close: async () => {},
}

// The leader holds the lock on a connection of its own, and proves it at each question: a lock lost
// with its connection (a killed backend, a restarted pooler, a DBA's idle timeout) is found at the
// next one, and taken again, on a new connection, when no other instance has taken it meanwhile.
// A stale leader that publishes on is harmless: the stream refuses what it already holds.
export function advisoryLockLeadership(url: string, stream: string): Leadership {
  const client = postgresClient(url, {
    max: 1,
    idle_timeout: 0,
    connect_timeout: 5,
    backoff: () => 1,
    onnotice: () => {},
    connection: { application_name: 'plant-store-feed', statement_timeout: 5000 },
  })
  const db = drizzle({ client })
  // Feeds to different streams from one database each have their own leader (locks/lock-registry.ts).
  const space = LOCK_SPACES[LOCKS.feedLeadership.space]
  const lock = { space, name: `feed-${nameHash(stream)}`, what: `the leadership of ${stream}` }
  let held: HeldLock | undefined
  const stepDown = async () => {
    await held?.abandon()
    held = undefined
  }
  // One call at a time: a step down between an isLeader's take and its answer would say it leads.
  let queue: Promise<unknown> = Promise.resolve()
  const serially = <T>(call: () => Promise<T>): Promise<T> => {
    const result = queue.then(call, call)
    queue = result.catch(() => {})
    return result
  }
  return {
    isLeader: () =>
      serially(async () => {
        if (held) {
          const proved = await held.prove().then(
            () => true,
            () => false,
          )
          if (proved) return true
          await stepDown()
        }
        held = await takeLock(db, lock, { wait: false }).catch(() => undefined)
        return held !== undefined
      }),
    release: () => serially(stepDown),
    close: () =>
      serially(async () => {
        await stepDown()
        await client.end({ timeout: 2 })
      }),
  }
}

// FNV-1a of the stream's name (31 bits), so that any stream's name makes a lock name of digits.
function nameHash(name: string): number {
  let hash = 0x811c9dc5
  for (const byte of new TextEncoder().encode(name)) hash = Math.imul(hash ^ byte, 0x01000193)
  return (hash >>> 0) & 0x7fffffff
}
