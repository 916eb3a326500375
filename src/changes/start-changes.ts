import type { Registry } from 'prom-client'
import type { Logger } from '../logger.ts'
import { createChangeMetrics } from '../observability/change-metrics.ts'
import type { Executor } from '../store/database.ts'
import { createChangeHub } from './change-hub.ts'
import { type ChangeRequest, openChangeStream } from './change-stream.ts'
import { startLogFollower } from './log-follower.ts'
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
  pollMs?: number
}

export type Changes = Awaited<ReturnType<typeof startChanges>>

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
  pollMs,
}: ChangesDeps) {
  const hub = createChangeHub({ logger, now, keepAliveMs, tickMs })
  const follower = await startLogFollower({ db, logger, pollMs, onEvents: hub.deliver }).catch((error) => {
    hub.close()
    throw error
  })
  const notices = noticesUrl
    ? postgresNotices({ url: noticesUrl, logger, onNotice: follower.wake })
    : undefined
  createChangeMetrics(registry, hub.count)
  return {
    // The stream's body; undefined once shutting down.
    open: (request: ChangeRequest) =>
      openChangeStream({ db, hub, logger, maxBufferedBytes, catchUpBatch }, request),
    // This process appended events: followers here and elsewhere read the log now.
    appended: () => {
      follower.wake()
      notices?.notify()
    },
    // Ends every stream at once (so that a shutdown does not wait for them), then stops reading.
    close: async () => {
      hub.close()
      await follower.stop()
      await notices?.close()
    },
  }
}
