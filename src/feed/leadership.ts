import { postgresClient } from '../store/postgres-client.ts'

// Whether this process is the one that publishes. Only an optimisation: a second publisher is
// refused by the stream (see nats-stream.ts), never duplicated; the lock keeps them from racing.
// Kept because it measured cheaper than two publishers racing (docs/performance.md, The event
// feed). What it costs: a follower asks once a second, one query.
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

// 'plan' in ASCII, and a hash of the stream's name: the two keys of the session advisory lock
// that makes a leader. Feeds to different streams from one database each have their own leader.
const LOCK_CLASS = 0x706c616e

// A session lock on a connection of its own: it is released the moment the leader's connection
// ends, by a crash included, and another instance takes it at its next try.
export function advisoryLockLeadership(url: string, stream: string): Leadership {
  const client = postgresClient(url, {
    max: 1,
    idle_timeout: 0,
    connect_timeout: 5,
    backoff: () => 1,
    onnotice: () => {},
    connection: { application_name: 'plant-store-feed', statement_timeout: 5000 },
  })
  const objectId = nameHash(stream)
  return {
    isLeader: async () => {
      try {
        // Asks for the lock only when this connection does not hold it already (a reconnected
        // connection has lost it): taking a session lock again would stack it.
        const [row] = await client<{ leader: boolean }[]>`select coalesce(
          (select granted from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()
             and classid = ${LOCK_CLASS}::oid and objid = ${objectId}::oid and objsubid = 2),
          pg_try_advisory_lock(${LOCK_CLASS}::int, ${objectId}::int)) as leader`
        return row?.leader === true
      } catch {
        return false
      }
    },
    release: async () => {
      await client`select pg_advisory_unlock(${LOCK_CLASS}::int, ${objectId}::int)`.catch(() => {})
    },
    close: () => client.end({ timeout: 2 }),
  }
}

// FNV-1a, kept to 31 bits so that it is a positive int4 (and the same oid in pg_locks).
function nameHash(name: string): number {
  let hash = 0x811c9dc5
  for (const byte of new TextEncoder().encode(name)) hash = Math.imul(hash ^ byte, 0x01000193)
  return (hash >>> 0) & 0x7fffffff
}
