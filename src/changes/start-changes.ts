import type { Registry } from 'prom-client'
import { createChangeMetrics } from '../observability/change-metrics.ts'
import type { Executor } from '../store/database.ts'
import { type ChangeHubOptions, createChangeHub } from './change-hub.ts'
import { type ChangeRequest, openChangeStream } from './change-stream.ts'
import { startLogFollower } from './log-follower.ts'
import { postgresNotices } from './postgres-notices.ts'

export type ChangesDeps = ChangeHubOptions & {
  // Where the log and the callers' plants are read.
  db: Executor
  registry: Registry
  // PostgreSQL: the database where instances notify each other of appends (the primary). Absent
  // (the embedded store, which one process holds): this process's own appends are all there is.
  noticesUrl?: string
  // The most plants one catch-up read takes.
  catchUpBatch?: number
}

export type Changes = Awaited<ReturnType<typeof startChanges>>

// GET /plants/changes's machinery: one follower of the log feeding every open stream.
export async function startChanges({
  db,
  registry,
  noticesUrl,
  catchUpBatch = 500,
  ...hubOptions
}: ChangesDeps) {
  const { logger } = hubOptions
  const hub = createChangeHub(hubOptions)
  const follower = await startLogFollower({ db, logger, onEvents: hub.deliver }).catch((error) => {
    hub.close()
    throw error
  })
  const notices = noticesUrl
    ? postgresNotices({ url: noticesUrl, logger, onNotice: follower.wake })
    : undefined
  createChangeMetrics(registry, hub.count)
  return {
    // The stream's body; undefined once shutting down.
    open: (request: ChangeRequest) => openChangeStream({ db, hub, logger, catchUpBatch }, request),
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
