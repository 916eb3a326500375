import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import type { Config, FeedConfig } from '../config/config.ts'
import type { Keyring } from '../crypto/keyring.ts'
import type { Database } from '../database/database.ts'
import type { ErasureFeed } from '../erasure/erase-owner.ts'
import { runLogFollower } from '../follower/follower.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import { feedFilter } from './cloud-event.ts'
import { advisoryLockLeadership, soleLeadership } from './leadership.ts'
import { type FeedStream, feedStream, streamInfo, subjectCovers } from './nats-stream.ts'
import { purgeOwner } from './purge-owner.ts'
import { pause, runRelay } from './relay.ts'

export type ErasureFeedDeps = {
  config: FeedConfig
  storage: Config['storage']
  db: Database
  // Opens the events the relay publishes, when this process must lead.
  keyring: Keyring
  logger: Logger
  // How long the notice may take to reach the stream, NATS unreachable included.
  waitMs?: number
  // How often the stream's tail is read meanwhile.
  checkMs?: number
}

const CONNECT_TIMEOUT_MS = 2000

// Steps 2 and 3 of an erasure as the CLI runs them, beside the running instances, on the store's
// recorded feed (feed-fact.ts). The notice reaches the stream through the relay, in log order (the
// relay resumes from the stream's last message: one published around it would make it skip
// events): the instance that leads publishes it, and when none does (no instance runs, or none
// reaches NATS) this process leads, with the same leadership as the service. A stream that does not
// exist holds nothing of the owner: it is not made (a service makes it, from the log as it is
// then). Connects on first use.
export function erasureFeed({
  waitMs = 30_000,
  checkMs = 200,
  ...deps
}: ErasureFeedDeps): ErasureFeed & { close: () => Promise<void> } {
  const feed: ErasureFeedParts = {
    ...deps,
    waitMs,
    checkMs,
    servers: `NATS at ${deps.config.servers.join(',')} (EVENTS_NATS_URL)`,
    named: `the NATS stream "${deps.config.stream}" (EVENTS_NATS_STREAM)`,
  }
  let connection: NatsConnection | undefined
  const connected = async (deadline: number) => (connection ??= await connectBefore(feed, deadline))
  return {
    awaitPublished: async (position) => {
      const deadline = Date.now() + waitMs
      const stream = await existingStream(feed, await connected(deadline))
      if (stream === undefined || (await holds(stream, position))) return
      await relayUntilHeld(feed, stream, position, deadline)
    },
    purge: async (erasure) => {
      const nc = await connected(Date.now() + waitMs)
      if (await exists(feed, nc)) await purgeAll(feed, nc, erasure)
    },
    close: async () => {
      await connection?.close()
    },
  }
}

// The feed's settings, and how failures name NATS and the stream.
type ErasureFeedParts = Required<ErasureFeedDeps> & { servers: string; named: string }

// A connection to NATS, tried again until `deadline`.
async function connectBefore(
  { config, servers, waitMs }: ErasureFeedParts,
  deadline: number,
): Promise<NatsConnection> {
  let cause: unknown
  while (Date.now() < deadline) {
    const connection = await connect({
      servers: config.servers,
      name: 'plant-store-erasure',
      timeout: Math.max(1, Math.min(CONNECT_TIMEOUT_MS, deadline - Date.now())),
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    }).catch((error: unknown) => {
      cause = error
      return undefined
    })
    if (connection) return connection
    await pause(Math.min(250, Math.max(0, deadline - Date.now())))
  }
  throw new Failure(
    'ERASURE_PENDING',
    `${servers} could not be reached within ${waitMs / 1000} s: ${String(cause)}`,
  )
}

const holds = async (stream: FeedStream, position: bigint) =>
  (await stream.readTail().catch(() => ({ position: -1n }))).position >= position

// Whether the stream exists; one that exists must carry the feed's subjects.
async function exists({ config, waitMs, named }: ErasureFeedParts, nc: NatsConnection): Promise<boolean> {
  const info = await streamInfo(await jetstreamManager(nc, { timeout: waitMs }), config.stream).catch(
    (error: unknown) => {
      throw new Failure('ERASURE_PENDING', `${named} could not be read: ${messageOf(error)}`)
    },
  )
  if (info === undefined) return false
  const filter = feedFilter(config.subjectPrefix)
  const subjects = info.config.subjects ?? []
  if (subjects.some((pattern) => subjectCovers(pattern, filter))) return true
  throw new Failure(
    'ERASURE_PENDING',
    `EVENTS_NATS_SUBJECT_PREFIX: ${named} captures ${JSON.stringify(subjects)}, which does not cover "${filter}": set the prefix the service has`,
  )
}

// The feed's stream, or undefined when it does not exist (it holds nothing of the owner).
async function existingStream(feed: ErasureFeedParts, nc: NatsConnection): Promise<FeedStream | undefined> {
  if (!(await exists(feed, nc))) return undefined
  return feedStream(nc, { ...feed.config, create: false }).catch((error: unknown) => {
    throw new Failure('ERASURE_PENDING', `${feed.named} could not be read: ${messageOf(error)}`)
  })
}

// This process relays the log, when it leads, until the stream holds `position` or the deadline.
async function relayUntilHeld(
  { config, storage, db, keyring, logger, checkMs, waitMs, servers, named }: ErasureFeedParts,
  stream: FeedStream,
  position: bigint,
  deadline: number,
) {
  const log = runLogFollower({ db, keyring, logger })
  const leadership =
    storage.kind === 'postgres' ? advisoryLockLeadership(storage.url, config.stream) : soleLeadership
  const relay = runRelay({
    follower: log,
    stream: Promise.resolve(stream),
    leadership,
    messages: config,
    logger,
  })
  try {
    while (Date.now() < deadline) {
      if (await holds(stream, position)) return
      await pause(checkMs)
    }
  } finally {
    await relay.stop()
    await log.stop()
    await leadership.close()
  }
  throw new Failure(
    'ERASURE_PENDING',
    `the OwnerErased notice (position ${position}) is not in ${named} after ${waitMs / 1000} s: ${servers} could not be reached, or no relay could publish the log up to it`,
  )
}

// Removes every message of the owner; any failure leaves the erasure pending.
async function purgeAll(
  { config, waitMs, named }: ErasureFeedParts,
  nc: NatsConnection,
  erasure: { pseudonym: string; owner: string },
) {
  try {
    await purgeOwner(nc, await jetstreamManager(nc, { timeout: waitMs }), config, erasure)
  } catch (error) {
    if (isFailure(error, 'ERASURE_PENDING')) throw error
    if (isFailure(error, 'PURGE_REFUSED')) throw new Failure('ERASURE_PENDING', error.message)
    throw new Failure(
      'ERASURE_PENDING',
      `the owner's messages could not be removed from ${named}: ${messageOf(error)}`,
    )
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
