import type { Registry } from 'prom-client'
import type { Logger } from '../logger.ts'
import { createChangeMetrics } from '../observability/change-metrics.ts'
import type { Executor } from '../store/database.ts'
import { createChangeHub } from './change-hub.ts'
import { startLogFollower } from './log-follower.ts'
import { type ChangeRequest, openChangeStream } from './open-change-stream.ts'
import { postgresNotices } from './postgres-notices.ts'

export type ChangesDeps = {
  // Where the log and the callers' plants are read.
  db: Executor
  logger: Logger
  registry: Registry
  // PostgreSQL: the database where instances notify each other of appends (the primary). Absent
  // (the embedded store, which one process holds): this process's own appends are all there is.
  noticesUrl?: string
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
  // This process appended events: followers here and elsewhere read the log now.
  appended: () => void
  count: () => number
  // Ends every stream at once (so that a shutdown does not wait for them), then stops reading.
  close: () => Promise<void>
}

// GET /plants/changes's machinery: one follower of the log feeding every open stream.
export async function startChanges({
  db,
  logger,
  registry,
  noticesUrl,
  now,
  keepAliveMs,
  tickMs,
  streamsPerOwner = 100,
  maxBufferedBytes = 1024 * 1024,
  stallMs = 10_000,
  catchUpBatch = 100,
}: ChangesDeps): Promise<Changes> {
  const hub = createChangeHub({ logger, streamsPerOwner, now, keepAliveMs, tickMs })
  const follower = await startLogFollower({ db, logger, onEvents: hub.deliver }).catch((error) => {
    hub.close()
    throw error
  })
  const notices = noticesUrl
    ? postgresNotices({ url: noticesUrl, logger, onNotice: follower.wake })
    : undefined
  createChangeMetrics(registry, hub.count)
  return {
    open: (request) =>
      openChangeStream({ db, hub, logger, maxBufferedBytes, stallMs, catchUpBatch }, request),
    appended: () => {
      follower.wake()
      notices?.notify()
    },
    count: hub.count,
    close: async () => {
      hub.close()
      await follower.stop()
      await notices?.close()
    },
  }
}
