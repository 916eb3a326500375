import type { Registry } from 'prom-client'
import type { Logger } from '../logger.ts'
import { createChangeMetrics } from '../observability/change-metrics.ts'
import type { Executor } from '../store/database.ts'
import { createChangeHub } from './change-hub.ts'
import { type FollowedLog, followLog } from './log-follower.ts'
import { type ChangeRequest, openChangeStream } from './open-change-stream.ts'

export type ChangesDeps = {
  // Where the callers' plants are read.
  db: Executor
  logger: Logger
  registry: Registry
  // The process's follower of the log, shared with the feed. Absent: one of its own, on `db`,
  // woken by notices on `noticesUrl` (PostgreSQL), closed with the streams.
  log?: FollowedLog
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

// GET /plants/changes's machinery: the log's follower feeding every open stream.
export async function startChanges({
  db,
  logger,
  registry,
  log,
  noticesUrl,
  now,
  keepAliveMs,
  tickMs,
  maxBufferedBytes = 1024 * 1024,
  catchUpBatch = 500,
}: ChangesDeps): Promise<Changes> {
  const hub = createChangeHub({ logger, now, keepAliveMs, tickMs })
  const follower = log ?? followLog({ db, logger, noticesUrl })
  const unsubscribe = follower.subscribe(hub.deliver)
  createChangeMetrics(registry, hub.count)
  return {
    open: (request) =>
      openChangeStream({ db, hub, follower, logger, maxBufferedBytes, catchUpBatch }, request),
    appended: follower.appended,
    count: hub.count,
    close: async () => {
      hub.close()
      unsubscribe()
      if (!log) await follower.close()
    },
  }
}
