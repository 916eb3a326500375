import { sql } from 'drizzle-orm'
import { type Database, type DatabaseHandle, rowsOf } from '../database/database.ts'
import type { Logger } from '../shared/logger.ts'
import { repeatEvery } from '../shared/repeat.ts'
import { within } from '../shared/time-limit.ts'

export type ReadReplica = { name: string; db: Database }

export type ReplicaStatus = { name: string; up: boolean; lagMs?: number }

export type ReplicaSet = ReturnType<typeof watchReplicas>

export type ReplicaSetDeps = {
  primary: Database
  replicas: { name: string; handle: DatabaseHandle }[]
  maxLagMs: number
  logger: Logger
}

// A sample of where the primary's WAL stood (bytes from the start) and when.
export type WalSample = { at: number; lsn: bigint }

const CHECK_INTERVAL_MS = 1000
const CHECK_TIMEOUT_MS = 2000
// Enough samples to tell any lag up to an hour at one check a second.
const MAX_SAMPLES = 3600

// Checks every replica each interval: is it a standby, and how much of the primary's WAL has it
// replayed. Lag is measured against the primary's own WAL positions, sampled at each check, not
// against the time of the last replayed commit: that one grows while the primary is idle.
export function watchReplicas({ primary, replicas, maxLagMs, logger }: ReplicaSetDeps) {
  const samples: WalSample[] = []
  // Each replica with what is known of it: `lagMs` undefined until a check has answered.
  const states = replicas.map(({ name, handle }) => ({
    name,
    db: handle.db,
    up: false,
    lagMs: undefined as number | undefined,
  }))
  let turn = 0

  const check = async () => {
    const lsn = await probe(primaryLsn(primary))
    if (lsn !== undefined) samples.push({ at: Date.now(), lsn })
    if (samples.length > MAX_SAMPLES) samples.splice(0, samples.length - MAX_SAMPLES)
    await Promise.all(
      states.map(async (state) => {
        const replayed = await probe(replayedLsn(state.db))
        const wasUp = state.up
        state.up = replayed !== undefined
        state.lagMs = replayed === undefined ? state.lagMs : lagMs(samples, replayed, Date.now())
        if (wasUp !== state.up) {
          logger.warn({ replica: state.name, up: state.up }, 'read replica changed state')
        }
      }),
    )
  }

  const firstCheck = check()
  const checks = repeatEvery(CHECK_INTERVAL_MS, check, (error) =>
    logger.warn({ err: error }, 'read replica check failed'),
  )

  return {
    // Replicas that may serve a read now (up, and no further behind than allowed), rotated so that
    // reads spread over them.
    available: (): ReadReplica[] => {
      const usable = states.filter((state) => state.up && (state.lagMs ?? Infinity) <= maxLagMs)
      turn = (turn + 1) % Math.max(1, usable.length)
      return [...usable.slice(turn), ...usable.slice(0, turn)]
    },
    // A read failed to reach it: no read goes there until a check answers again.
    markDown: (replica: ReadReplica) => {
      const state = states.find((candidate) => candidate === replica)
      if (state?.up) logger.warn({ replica: replica.name }, 'read replica unreachable; reading elsewhere')
      if (state) state.up = false
    },
    statuses: (): ReplicaStatus[] => states.map(({ name, up, lagMs }) => ({ name, up, lagMs })),
    // Resolves after the first round of checks.
    firstCheck: firstCheck.catch(() => {}),
    close: async () => {
      checks.stop()
      await Promise.all(replicas.map(({ handle }) => handle.close()))
    },
  }
}

// How long ago the primary first stood past `replayed`: 0 when the replica has everything the
// primary had at the latest sample. Samples are in time order.
export function lagMs(samples: WalSample[], replayed: bigint, now: number): number {
  const latest = samples.at(-1)
  if (latest === undefined || replayed >= latest.lsn) return 0
  const passed = samples.find((sample) => sample.lsn > replayed) ?? latest
  return Math.max(0, now - passed.at)
}

async function primaryLsn(db: Database): Promise<bigint> {
  const [row] = rowsOf<{ lsn: string }>(
    await db.execute(sql`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as lsn`),
  )
  return BigInt(row?.lsn ?? 0)
}

// Undefined for a server that is not a standby any more (promoted): it no longer follows the primary.
async function replayedLsn(db: Database): Promise<bigint | undefined> {
  const [row] = rowsOf<{ lsn: string | null }>(
    await db.execute(
      sql`select case when pg_is_in_recovery()
                 then pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::text end as lsn`,
    ),
  )
  return row?.lsn == null ? undefined : BigInt(row.lsn)
}

// Undefined when a check query fails or does not answer in time.
function probe<T>(query: Promise<T>): Promise<T | undefined> {
  const answer = query.catch(() => undefined)
  return within(answer, CHECK_TIMEOUT_MS)
}
