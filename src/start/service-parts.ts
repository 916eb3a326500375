import { Registry } from 'prom-client'
import { verifierFromConfig } from '../auth/verifier-from-config.ts'
import { type Changes, runChanges } from '../changes/changes-service.ts'
import type { Config } from '../config/config.ts'
import type { DatabaseHandle } from '../database/database.ts'
import { isUnprepared } from '../database/postgres-client.ts'
import {
  describeClientTimeout,
  describeSettingsNotApplied,
  settingsNotApplied,
} from '../database/settings-applied.ts'
import { runFeed } from '../feed/feed-service.ts'
import { followLog } from '../follower/follower.ts'
import { BODY_TIMEOUT_MS } from '../http/json-body.ts'
import { watchEventLogReadersHeld } from '../observability/event-log-readers-held.ts'
import { collectProcessMetrics } from '../observability/process-metrics.ts'
import { openStorage } from '../opening/open-store.ts'
import type { Logger } from '../shared/logger.ts'
import { createTracing } from '../tracing/otel-tracing.ts'
import { moveFromPglite } from '../transfer/pglite-move.ts'
import { type App, createApp } from './app.ts'
import { countDroppedLogLines } from './logger-metrics.ts'
import { startReplicaReads } from './replica-reads.ts'

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

export type ServiceParts = {
  app: App
  storage: DatabaseHandle
  changes: Changes
  // Everything else the service started, stopped in the order a drain needs once the listener is
  // gone and the change streams have ended.
  stop: () => Promise<void>
}

// The store, the log's one reader, the feed, the replicas' reads, the change streams and the app,
// wired from the configuration.
export async function startServiceParts(
  config: Config,
  logger: Logger,
  droppedLogLines: () => number,
): Promise<ServiceParts> {
  const storage = await openStorage(config.storage, {
    tell: (line, detail) => logger.info(detail, line),
    moveEarlierStore: moveFromPglite,
  })
  await checkSessionSettings(storage, logger)
  // The embedded server is reached like any PostgreSQL, through its URL.
  const database = { kind: 'postgres' as const, ...storage.settings }
  const tracing = await startTracing(config, logger)
  const verifyToken = await verifierFromConfig(config)
  const registry = new Registry()
  collectProcessMetrics({ registry, databaseProcessIds: storage.processIds })
  countDroppedLogLines(registry, droppedLogLines)
  // The one reader of the log in this process: the feed and the change streams both take from it.
  const follower = followLog({
    db: storage.db,
    keyring: storage.keyring,
    logger,
    idleAfterMs: FOLLOWER_IDLE_MS,
  })
  const feed =
    config.feed &&
    (await runFeed({
      config: config.feed,
      storage: database,
      db: storage.db,
      follower,
      logger,
      registry,
      tracing,
    }))
  const replicaReads = await readsFromReplicas(config, storage, logger, registry)
  const changes = await runChanges({
    db: storage.db,
    keyring: storage.keyring,
    replicas: replicaReads?.changes,
    follower,
    logger,
    registry,
    streamsPerOwner: config.changeStreamsPerOwner,
  })
  const readersHeld = watchEventLogReadersHeld({ db: storage.db, registry, logger })
  const app = createApp({
    db: storage.db,
    keyring: storage.keyring,
    verifyToken,
    logger,
    registry,
    onAppended: follower.appended,
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
  const stop = async () => {
    await feed?.close()
    readersHeld.stop()
    await follower.close()
    await replicaReads?.close()
    await storage.close()
    // Last, so that the spans of everything above are sent.
    await tracing?.shutdown()
  }
  return { app, storage, changes, stop }
}

// Loads the OpenTelemetry SDK only when an endpoint is set, and says where spans go.
async function startTracing(config: Config, logger: Logger) {
  if (!config.tracing) return undefined
  const tracing = await createTracing(config.tracing, logger)
  const { serviceName, sampler } = config.tracing
  // Without any user, password or query the URL may hold.
  const url = new URL(config.tracing.url)
  const traces = `${url.origin}${url.pathname}`
  logger.info({ traces, serviceName, sampler }, `tracing on: spans go to ${traces}`)
  return tracing
}

// Pages and change streams read from the replicas, when some are set (PostgreSQL only).
async function readsFromReplicas(
  config: Config,
  storage: DatabaseHandle,
  logger: Logger,
  registry: Registry,
) {
  if (!config.readReplicas || config.storage.kind !== 'postgres') return undefined
  return startReplicaReads({
    config: config.readReplicas,
    settings: config.storage,
    primary: storage.db,
    logger,
    registry,
  })
}

// Whether the sessions have the settings the pool asks for, or, behind a pooler, how the
// statement timeout is kept instead: said in one `warn` line either way.
async function checkSessionSettings(storage: DatabaseHandle, logger: Logger): Promise<void> {
  const { url, statementTimeoutMs } = storage.settings
  if (isUnprepared(url)) {
    logger.warn({ statementTimeoutMs }, describeClientTimeout(statementTimeoutMs))
    return
  }
  const dropped = await settingsNotApplied(storage.db, statementTimeoutMs)
  if (dropped.length > 0) logger.warn({ settings: dropped }, describeSettingsNotApplied(dropped))
}
