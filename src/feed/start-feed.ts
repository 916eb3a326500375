import type { Registry } from 'prom-client'
import { type Config, ConfigError, type FeedConfig } from '../config.ts'
import type { Logger } from '../logger.ts'
import { createFeedMetrics } from '../observability/feed-metrics.ts'
import type { Database } from '../store/database.ts'
import { feedLag } from './feed-status.ts'
import { advisoryLockLeadership, soleLeadership } from './leadership.ts'
import { linkToNats } from './nats-link.ts'
import { feedStream } from './nats-stream.ts'
import { startRelay } from './relay.ts'

export type Feed = { wake: () => void; close: () => Promise<void> }

export type FeedDeps = {
  config: FeedConfig
  storage: Config['storage']
  db: Database
  logger: Logger
  registry: Registry
}

// The feed beside the server: it never holds up a request. When NATS answers at start a stream
// that cannot carry the feed stops the start; otherwise that is checked once NATS answers.
export async function startFeed({ config, storage, db, logger, registry }: FeedDeps): Promise<Feed> {
  const link = linkToNats(config.servers, logger)
  const first = await link.firstAttempt
  if (first !== undefined) {
    try {
      await (await feedStream(first, config)).ensure()
    } catch (error) {
      if (error instanceof ConfigError) {
        await link.close()
        throw error
      }
      logger.warn({ err: error }, 'the event feed could not check its stream yet')
    }
  }
  const stream = link.ready.then((nc) => feedStream(nc, config))
  stream.catch(() => {})
  const leadership =
    storage.kind === 'postgres' ? advisoryLockLeadership(storage.url, config.stream) : soleLeadership
  const relay = startRelay({
    db,
    stream,
    leadership,
    messages: config,
    logger,
    onPublished: (count) => metrics.published(count),
  })
  const readCursor = async () => {
    if (!link.connected()) throw new Error('NATS is not connected')
    return (await (await stream).readTail()).cursor
  }
  const metrics = createFeedMetrics(registry, {
    connected: link.connected,
    lag: () => feedLag(db, readCursor, relay.lastPublished()),
  })
  logger.info({ stream: config.stream, connected: first !== undefined }, 'event feed started')
  return {
    wake: relay.wake,
    close: async () => {
      await relay.stop()
      await leadership.close()
      await link.close()
    },
  }
}
