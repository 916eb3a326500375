import { postgresClient } from '../store/postgres-client.ts'

// Whether this process is the one that publishes. Only an optimisation: a second publisher is
// refused by the stream (see nats-stream.ts), never duplicated; the lock keeps them from racing.
// Kept because it measured cheaper than two publishers racing (docs/performance.md, The event
// feed). What it costs: a follower asks once a second, one query for the leader, three for others.
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

// 'plan' in ASCII, and a hash of the stream's name: the two keys of the advisory lock that makes
// a leader. Feeds to different streams from one database each have their own leader.
const LOCK_CLASS = 0x706c616e

// The leader holds the lock in a transaction it keeps open on a connection of its own: that pins
// its server connection through any pooler (PgBouncer in transaction mode included), and the lock
// ends with the transaction, at a crash too, and another instance takes it at its next try. READ
// COMMITTED and idle, the transaction holds no snapshot, so it holds back no VACUUM.
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
  // Whether a transaction of this client's may be open (held, failed, or lost with its
  // connection), and whether it took the lock.
  let open = false
  let held = false
  // Whether this backend holds the lock: false once the transaction is gone (a lost connection,
  // a DBA's idle_in_transaction_session_timeout), as postgres.js then runs it on a new one.
  // The statements in the held transaction go by the simple protocol: a portal of the extended
  // one stays open until the next statement, and holds its snapshot. Their values are constants.
  const stillHeld = () =>
    client
      .unsafe<{ held: boolean }[]>(`select exists (select 1 from pg_locks where locktype = 'advisory'
        and pid = pg_backend_pid() and classid = ${LOCK_CLASS} and objid = ${objectId}
        and objsubid = 2 and granted) as held`)
      .then(
        ([row]) => row?.held === true,
        () => false,
      )
  const commit = async () => {
    if (open) await client`commit`.catch(() => {})
    open = held = false
  }
  // One call at a time: a commit between an isLeader's begin and its lock would leave the lock
  // taken outside any transaction, so released at once, by one that says it leads.
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
          if (await stillHeld()) return true
          held = false
        }
        try {
          // Ends what is left of a lost or failed transaction: taking the lock in it would stack it.
          if (open) await client`rollback`
          open = true
          await client`begin isolation level read committed`
          const [row] = await client.unsafe<{ leader: boolean }[]>(
            `select pg_try_advisory_xact_lock(${LOCK_CLASS}, ${objectId}) as leader`,
          )
          held = row?.leader === true
          if (!held) {
            await client`rollback`
            open = false
          }
          return held
        } catch {
          held = false
          return false
        }
      }),
    release: () => serially(commit),
    close: () =>
      serially(async () => {
        await Promise.all([commit(), client.end({ timeout: 2 })])
      }),
  }
}

// FNV-1a, kept to 31 bits so that it is a positive int4 (and the same oid in pg_locks).
function nameHash(name: string): number {
  let hash = 0x811c9dc5
  for (const byte of new TextEncoder().encode(name)) hash = Math.imul(hash ^ byte, 0x01000193)
  return (hash >>> 0) & 0x7fffffff
}
