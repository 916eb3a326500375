import { type ConnectionOptions, connect, type NatsConnection } from '@nats-io/transport-node'
import type { Registry } from 'prom-client'
import type { Config, FeedConfig } from '../config/config.ts'
import type { Database } from '../database/database.ts'
import { countEventsAfter } from '../event-log/reading.ts'
import type { LogFollower } from '../follower/follower.ts'
import { createFeedMetrics } from '../observability/feed-metrics.ts'
import { isFailure } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import { within } from '../shared/time-limit.ts'
import type { Tracing } from '../tracing/tracing.ts'
import { recordFeed } from './feed-fact.ts'
import { advisoryLockLeadership, soleLeadership } from './leadership.ts'
import { feedStream } from './nats-stream.ts'
import { isPublishable } from './publishable.ts'
import { runRelay } from './relay.ts'

export type Feed = { close: () => Promise<void> }

export type FeedDeps = {
  config: FeedConfig
  storage: Config['storage']
  db: Database
  // The process's follower of the log, which the relay publishes from.
  follower: Pick<LogFollower, 'eventsAfter' | 'advanced' | 'position' | 'hold'>
  logger: Logger
  registry: Registry
  // Spans of the publishes; none unless tracing is on.
  tracing?: Tracing
}

// The client reconnects by itself, for ever, and pings often enough to notice within seconds a
// network that went silent.
const NATS_OPTIONS: ConnectionOptions = {
  name: 'plant-store',
  timeout: 2000,
  reconnect: true,
  maxReconnectAttempts: -1,
  reconnectTimeWait: 250,
  pingInterval: 3000,
  maxPingOut: 2,
}

// How long a scrape waits for the stream's tail before it counts from the last one known.
const LAG_READ_TIMEOUT_MS = 1000

// The feed beside the server: it never holds up a request. When NATS answers at start a stream
// that cannot carry the feed stops the start; otherwise that is checked once NATS answers.
export async function runFeed(deps: FeedDeps): Promise<Feed> {
  const { config, storage, db, follower, logger, registry, tracing } = deps
  await recordFeed(db, config)
  const options = { ...NATS_OPTIONS, servers: config.servers }
  const first = await connect(options).catch((error: unknown) => {
    logger.warn({ err: error, servers: config.servers }, 'the event feed cannot reach NATS yet')
    return undefined
  })
  // Not there at first: the client keeps trying until NATS answers.
  const connecting = first ? Promise.resolve(first) : connect({ ...options, waitOnFirstConnect: true })
  let connection: NatsConnection | undefined
  let connected = false
  const stream = connecting.then((nc) => {
    if (first === undefined) logger.info({ servers: config.servers }, 'the event feed reached NATS')
    connection = nc
    void watchStatus(nc, (up) => {
      connected = up
    })
    return feedStream(nc, config)
  })
  stream.catch(() => {})
  if (first !== undefined) {
    await stream
      .then((ready) => ready.ensure())
      .catch(async (error: unknown) => {
        if (!isFailure(error, 'BAD_SETTING')) {
          return logger.warn({ err: error }, 'the event feed could not check its stream yet')
        }
        await first.close()
        throw error
      })
  }
  const leadership =
    storage.kind === 'postgres' ? advisoryLockLeadership(storage.url, config.stream) : soleLeadership
  const metrics = createFeedMetrics(registry, {
    connected: () => connected,
    // From the stream's tail when it answers in time, else from the last cursor the relay knew;
    // the events it will publish only (not those of erased owners).
    lag: async () => {
      const read = connected ? stream.then((ready) => ready.readTail()) : undefined
      const tail =
        read &&
        (await within(
          read.catch(() => undefined),
          LAG_READ_TIMEOUT_MS,
        ))
      const position = tail?.position ?? relay.lastPublished()
      return position === undefined ? undefined : countEventsAfter(db, position, isPublishable)
    },
  })
  const relay = runRelay({
    follower,
    stream,
    leadership,
    messages: config,
    logger,
    tracing,
    onPublished: metrics.published,
  })
  logger.info({ stream: config.stream, connected: first !== undefined }, 'event feed started')
  return {
    close: async () => {
      await relay.stop()
      await leadership.close()
      if (connection) await connection.close()
      else void connecting.then((nc) => nc.close())
    },
  }
}

// Tells whether the connection is up each time that changes, until it is closed.
async function watchStatus(nc: NatsConnection, onChange: (connected: boolean) => void): Promise<void> {
  onChange(true)
  for await (const status of nc.status()) {
    if (status.type === 'disconnect') onChange(false)
    if (status.type === 'reconnect') onChange(true)
  }
  onChange(false)
}
