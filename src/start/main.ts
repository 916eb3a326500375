import process from 'node:process'
import { Registry } from 'prom-client'
import { verifierFromConfig } from '../auth/verifier-from-config.ts'
import { startChanges } from '../changes/start-changes.ts'
import { loadConfig, requireTokenKeys } from '../config/config.ts'
import { summarizeConfig } from '../config/summary.ts'
import { findUnknownSettings } from '../config/unknown-settings.ts'
import { followLog } from '../event-log/follower.ts'
import { describeUpgrade } from '../event-log/upgrade.ts'
import { startFeed } from '../feed/start-feed.ts'
import { BODY_TIMEOUT_MS } from '../http/json-body.ts'
import { watchLogReadersHeld } from '../observability/log-readers-held.ts'
import { collectProcessMetrics } from '../observability/process-metrics.ts'
import { describeMove, moveFromPglite } from '../replay/pglite-move.ts'
import { isFailure } from '../shared/errors.ts'
import { createLogger } from '../shared/logger.ts'
import { within } from '../shared/time-limit.ts'
import { startTracing } from '../tracing/start-tracing.ts'
import { createApp } from './app.ts'
import { openStorage } from './open-store.ts'
import { startReplicaReads } from './replica-reads.ts'
import { serve } from './serve.ts'

// Group commit: a second batch goes in while one is in the database, which measured best
// (docs/architecture.md, Design notes).
const BATCHES_IN_FLIGHT = 2
// Listings that arrive together share a statement (plants/page-groups.ts); a few such statements
// run side by side, so that a listing seldom waits for a batch ahead of it.
const READS_IN_FLIGHT = 4
// The log is read only while the feed publishes or a change stream is open, and this long after
// the last one ends (a client reconnecting finds the follower still reading): a service nobody
// follows does not read back what it writes (docs/architecture.md, Design notes).
const FOLLOWER_IDLE_MS = 10_000

async function main(): Promise<void> {
  const unknown = findUnknownSettings(process.env)
  const config = sayingUnknown(unknown, () => {
    const config = loadConfig(process.env)
    requireTokenKeys(config)
    return config
  })
  const pretty =
    config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true)
  const logger = createLogger(config.logLevel, { pretty })
  for (const { name, nearest, message } of unknown) logger.warn({ variable: name, nearest }, message)
  const storage = await openStorage(config.storage, {
    onProgress: (progress) => logger.info(progress, describeUpgrade(progress)),
  })
  // Without its PostgreSQL the embedded service cannot heal by itself: it stops, for its supervisor
  // to start it again (a start deals with whatever the server left).
  void storage.lost?.then((message) => {
    if (message === undefined) return
    logger.fatal(message)
    process.exit(1)
  })
  const moved = storage.dataDir
    ? await moveFromPglite(storage.db, storage.dataDir, storage.settings.keys ?? [])
    : undefined
  if (moved) logger.info(moved, describeMove(moved))
  // The embedded server is reached like any PostgreSQL, through its URL.
  const database = { kind: 'postgres' as const, ...storage.settings }
  // Loads the OpenTelemetry SDK only when an endpoint is set.
  const tracing = config.tracing && (await startTracing(config.tracing, logger))
  if (config.tracing) {
    const { serviceName, sampler } = config.tracing
    // Without any user, password or query the URL may hold.
    const url = new URL(config.tracing.url)
    const traces = `${url.origin}${url.pathname}`
    logger.info({ traces, serviceName, sampler }, `tracing on: spans go to ${traces}`)
  }
  const verifyToken = await verifierFromConfig(config)
  const registry = new Registry()
  collectProcessMetrics({ registry, databaseProcessIds: storage.processIds })
  // The one reader of the log in this process: the feed and the change streams both take from it.
  const log = followLog({
    db: storage.db,
    keyring: storage.keyring,
    logger,
    idleAfterMs: FOLLOWER_IDLE_MS,
    noticesUrl: database.url,
  })
  const feed = config.feed
    ? await startFeed({
        config: config.feed,
        storage: database,
        db: storage.db,
        log,
        logger,
        registry,
        tracing,
      })
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
    keyring: storage.keyring,
    replicas: replicaReads?.changes,
    log,
    logger,
    registry,
    streamsPerOwner: config.changeStreamsPerOwner,
  })
  const readersHeld = watchLogReadersHeld({ db: storage.db, registry, logger })
  const app = createApp({
    db: storage.db,
    keyring: storage.keyring,
    verifyToken,
    logger,
    registry,
    onAppended: log.appended,
    changes,
    readPlants: replicaReads?.readPlants,
    batchesInFlight: BATCHES_IN_FLIGHT,
    readsInFlight: READS_IN_FLIGHT,
    logSubject: config.logSubject,
    // A stalled body must get its 408 before the request deadline answers 503 for it.
    bodyTimeoutMs: Math.min(BODY_TIMEOUT_MS, Math.floor(config.requestTimeoutMs / 2)),
    cors: config.cors,
    tracing,
  })
  // Everything the service started, stopped in the order a drain needs once the listener is gone.
  const stopParts = async () => {
    await feed?.close()
    readersHeld.stop()
    await log.close()
    await replicaReads?.close()
    await storage.close()
    // Last, so that the spans of everything above are sent.
    await tracing?.shutdown()
  }
  let server: ReturnType<typeof serve>
  try {
    server = serve(app, {
      hostname: config.host,
      port: config.port,
      requestTimeoutMs: config.requestTimeoutMs,
      logger,
      cors: config.cors,
    })
  } catch (error) {
    // A port in use or a bad HOST: the embedded server stops with the service, cleanly.
    await changes.close()
    await stopParts()
    throw error
  }
  const summary = summarizeConfig(config)
  logger.info(
    { host: config.host, port: server.port, ...summary.fields },
    `plant store listening on ${config.host}:${server.port}: ${summary.text}`,
  )

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
    await stopParts()
    logger.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

// A setting that stops the start may be one of the unknown ones misspelt: they are said first.
function sayingUnknown<T>(unknown: { message: string }[], load: () => T): T {
  try {
    return load()
  } catch (error) {
    for (const { message } of unknown) console.error(message)
    throw error
  }
}

main().catch((error: unknown) => {
  // A failure that stops a start is said in one line; anything else is a bug, with its stack.
  console.error(isFailure(error) ? `plant store cannot start: ${error.message}` : error)
  process.exit(1)
})
