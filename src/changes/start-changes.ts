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
  // A stream whose client leaves this much text unread is disconnected.
  maxBufferedBytes?: number
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
  maxBufferedBytes = 1024 * 1024,
  catchUpBatch = 500,
}: ChangesDeps): Promise<Changes> {
  const hub = createChangeHub({ logger, now, keepAliveMs, tickMs })
  const follower = await startLogFollower({ db, logger, onEvents: hub.deliver }).catch((error) => {
    hub.close()
    throw error
  })
  const notices = noticesUrl
    ? postgresNotices({ url: noticesUrl, logger, onNotice: follower.wake })
    : undefined
  createChangeMetrics(registry, hub.count)
  return {
    open: (request) => openChangeStream({ db, hub, logger, maxBufferedBytes, catchUpBatch }, request),
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
