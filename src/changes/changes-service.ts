import type { Registry } from 'prom-client'
import type { Keyring } from '../crypto/keyring.ts'
import type { Executor } from '../database/database.ts'
import { type FollowedLog, followLog } from '../follower/follower.ts'
import { createChangeMetrics } from '../observability/change-metrics.ts'
import type { ReplicaSet } from '../replicas/replica-health.ts'
import type { Logger } from '../shared/logger.ts'
import { createChangeHub } from './change-hub.ts'
import { type ChangeReads, primaryChangeReads } from './change-reads.ts'
import { type ChangeRequest, openChangeStream } from './open-change-stream.ts'
import { replicaChangeReads } from './replica-change-reads.ts'
import { followWalMarks } from './wal-marks.ts'

// Streams read from these replicas (DATABASE_READ_URLS), each read waiting at most `waitMs` for one
// to replay what it must show; `onRead` is told where each read was served.
export type ChangeReplicas = {
  set: Pick<ReplicaSet, 'available' | 'markDown'>
  waitMs: number
  onRead: (source: string) => void
}

export type ChangesDeps = {
  // The primary: the callers' plants are read here unless `replicas` are given.
  db: Executor
  // Opens the events the streams deliver.
  keyring: Keyring
  replicas?: ChangeReplicas
  logger: Logger
  registry: Registry
  // The process's follower of the log, shared with the feed. Absent: one of its own, on `db`,
  // closed with the streams.
  follower?: FollowedLog
  // That follower's `idleAfterMs` (follower/follower.ts): it reads only while a stream is open, and
  // this long after.
  idleAfterMs?: number
  now?: () => number
  keepAliveMs?: number
  tickMs?: number
  // The most streams one owner holds open on this instance (CHANGE_STREAMS_PER_OWNER).
  streamsPerOwner?: number
  // Bytes of live events that wait for a client before the stream reads them again from the
  // database; a client that then takes nothing for `stallMs` is disconnected.
  maxBufferedBytes?: number
  stallMs?: number
  catchUpBatch?: number
}

export type Changes = {
  open: (request: ChangeRequest) => Promise<ReadableStream<Uint8Array>>
  // This process appended events: its follower reads the log now.
  appended: () => void
  count: () => number
  // Ends every stream at once (so that a shutdown does not wait for them), then stops reading.
  close: () => Promise<void>
}

// GET /plants/changes's machinery: the log's follower feeding every open stream.
export async function runChanges({
  db,
  keyring,
  replicas,
  logger,
  registry,
  follower: sharedFollower,
  idleAfterMs,
  now,
  keepAliveMs,
  tickMs,
  streamsPerOwner = 100,
  maxBufferedBytes = 1024 * 1024,
  stallMs = 10_000,
  catchUpBatch = 100,
}: ChangesDeps): Promise<Changes> {
  const hub = createChangeHub({ logger, streamsPerOwner, now, keepAliveMs, tickMs })
  const follower = sharedFollower ?? followLog({ db, keyring, logger, idleAfterMs })
  const unsubscribe = follower.subscribe(hub.deliver)
  const position = () => follower.position() ?? 0n
  // The follower stays on the primary: it is one read per wake-up for the whole process, and its
  // horizon (event-log/horizon.ts) is read from the primary's locks, which a replica does not have.
  const reads: ChangeReads = replicas
    ? replicaChangeReads({
        primary: db,
        replicas: replicas.set,
        marks: followWalMarks({ primary: db, position }),
        position,
        waitMs: replicas.waitMs,
        onRead: replicas.onRead,
      })
    : primaryChangeReads(db, position)
  createChangeMetrics(registry, hub.count)
  return {
    open: (request) =>
      openChangeStream({ reads, hub, follower, logger, maxBufferedBytes, stallMs, catchUpBatch }, request),
    appended: follower.appended,
    count: hub.count,
    close: async () => {
      hub.close()
      unsubscribe()
      if (!sharedFollower) await follower.close()
    },
  }
}
