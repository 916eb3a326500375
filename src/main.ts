import process from 'node:process'
import { Registry } from 'prom-client'
import { createApp } from './app.ts'
import { verifierFromConfig } from './auth/verifier-from-config.ts'
import { startChanges } from './changes/start-changes.ts'
import { loadConfig } from './config.ts'
import { isFailure } from './errors.ts'
import { startFeed } from './feed/start-feed.ts'
import { BODY_TIMEOUT_MS } from './http/json-body.ts'
import { followLog } from './log/follower.ts'
import { openStorage } from './log/open-store.ts'
import { describeUpgrade } from './log/upgrade.ts'
import { createLogger } from './logger.ts'
import { watchLogReadersHeld } from './observability/log-readers-held.ts'
import { collectProcessMetrics } from './observability/process-metrics.ts'
import { startReplicaReads } from './plants/start-replica-reads.ts'
import { serve } from './serve.ts'
import { within } from './time-limit.ts'

// Group commit: on PostgreSQL a second batch goes in while one is in the database (measured: more
// creates/s than one at a time at 64 connections, as many as one per pooled connection, with
// larger batches); the embedded database runs one statement at a time on this thread anyway.
const BATCHES_IN_FLIGHT = { postgres: 2, embedded: 1 } as const
// Listings that arrive together share a statement (plants/page-reads.ts); on PostgreSQL a few such
// statements run side by side, so that a listing seldom waits for a batch ahead of it.
const READS_IN_FLIGHT = { postgres: 4, embedded: 1 } as const
// The log is read only while the feed publishes or a change stream is open, and this long after
// the last one ends (a client reconnecting finds the follower still reading): a service nobody
// follows does not read back what it writes (measured: two statements per create at 1 connection).
const FOLLOWER_IDLE_MS = 10_000

async function main(): Promise<void> {
  const config = loadConfig(process.env)
  const pretty =
    config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true)
  const logger = createLogger(config.logLevel, { pretty })
  const storage = await openStorage(config.storage, {
    onProgress: (progress) => logger.info(progress, describeUpgrade(progress)),
  })
  const verifyToken = await verifierFromConfig(config)
  const registry = new Registry()
  collectProcessMetrics({ registry })
  // The one reader of the log in this process: the feed and the change streams both take from it.
  const log = followLog({
    db: storage.db,
    logger,
    idleAfterMs: FOLLOWER_IDLE_MS,
    noticesUrl: config.storage.kind === 'postgres' ? config.storage.url : undefined,
  })
  const feed = config.feed
    ? await startFeed({ config: config.feed, storage: config.storage, db: storage.db, log, logger, registry })
    : undefined
  const replicaReads =
    config.readReplicas && config.storage.kind === 'postgres'
      ? await startReplicaReads({
          config: config.readReplicas,
          settings: config.storage,
          primary: storage.db,
          logger,
          registry,
        })
      : undefined
  const changes = await startChanges({
    db: storage.db,
    replicas: replicaReads?.changes,
    log,
    logger,
    registry,
    streamsPerOwner: config.changeStreamsPerOwner,
  })
  const readersHeld =
    storage.kind === 'postgres' ? watchLogReadersHeld({ db: storage.db, registry, logger }) : undefined
  const app = createApp({
    db: storage.db,
    verifyToken,
    logger,
    registry,
    onAppended: log.appended,
    changes,
    readPlants: replicaReads?.readPlants,
    batchesInFlight: BATCHES_IN_FLIGHT[storage.kind],
    readsInFlight: READS_IN_FLIGHT[storage.kind],
    logSubject: config.logSubject,
    // A stalled body must get its 408 before the request deadline answers 503 for it.
    bodyTimeoutMs: Math.min(BODY_TIMEOUT_MS, Math.floor(config.requestTimeoutMs / 2)),
  })
  const server = serve(app, {
    hostname: config.host,
    port: config.port,
    requestTimeoutMs: config.requestTimeoutMs,
    logger,
  })
  logger.info({ host: config.host, port: server.port, storage: storage.kind }, 'plant store listening')

  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'draining requests in flight')
    // Open change streams would hold the drain until their clients left: end them first.
    await changes.close()
    // Every request is answered within the deadline; a response body still being written to a
    // client that does not read (Deno does not reset that connection) is not waited for longer.
    await within(server.stop(), config.requestTimeoutMs)
    await feed?.close()
    readersHeld?.stop()
    await log.close()
    await replicaReads?.close()
    await storage.close()
    logger.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

main().catch((error: unknown) => {
  // A failure that stops a start is said in one line; anything else is a bug, with its stack.
  console.error(isFailure(error) ? `plant store cannot start: ${error.message}` : error)
  process.exit(1)
})
