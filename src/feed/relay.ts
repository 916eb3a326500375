import type { Logger } from '../logger.ts'
import type { Database } from '../store/database.ts'
import { type LogCursor, readLog } from '../store/event-log.ts'
import { pause, unlessAborted } from './abort.ts'
import { type MessageSettings, toFeedMessage } from './cloud-event.ts'
import type { Leadership } from './leadership.ts'
import type { FeedStream, Tail } from './nats-stream.ts'

export type RelayDeps = {
  db: Database
  // Resolves once NATS is reachable (it may never be, while the relay waits).
  stream: Promise<FeedStream>
  leadership: Leadership
  messages: MessageSettings
  logger: Logger
  onPublished?: (count: number) => void
  batchSize?: number
  // How often the log is read when nothing woke the relay: writes of other instances and imports.
  pollMs?: number
  // How often a follower tries to become the leader, and the leader checks it still is.
  leadershipCheckMs?: number
  // The least time between two reads of the log while it is not far behind: under a stream of
  // creates each wake would otherwise cost a query and a publish round of its own.
  gatherMs?: number
  // The wait before a round that failed is tried again. NATS reconnects by itself (see
  // start-feed.ts); this only spaces the rounds that fail until it has.
  retryMs?: number
}

export type Relay = {
  // Something was appended: read the log now rather than at the next poll.
  wake: () => void
  // The log cursor of the last message known to be in the stream.
  lastPublished: () => LogCursor | undefined
  stop: () => Promise<void>
}

// Failed rounds in a row after which a leader steps down for a while: perhaps only this
// instance cannot reach NATS, and another can.
const STEP_DOWN_AFTER = 3

// Everything about the relay that changes, in one place.
type RelayState = {
  // Where the stream ends, as last read or published; undefined when it must be read again.
  tail: Tail | undefined
  // The log cursor of the last message known to be in the stream, kept across failures.
  lastPublished: LogCursor | undefined
  // Aborted by `wake`; replaced before each read of the log, so a wake during a round is kept.
  woken: AbortController
  // Until when this instance is known to lead without asking again.
  leaderUntil: number
  // Failed rounds in a row.
  failures: number
}

// Publishes the log, in log order, from where the stream ends. Each round reads the stream's
// tail again after any failure, so a crash, a lost ack or a competing instance never makes it
// skip or repeat an event: the stream, not memory, says what is in it.
export function startRelay(deps: RelayDeps): Relay {
  const stop = new AbortController()
  const state: RelayState = {
    tail: undefined,
    lastPublished: undefined,
    woken: new AbortController(),
    leaderUntil: 0,
    failures: 0,
  }
  const running = relay(deps, state, stop.signal).catch((error: unknown) => {
    if (!stop.signal.aborted) deps.logger.error({ err: error }, 'the event feed stopped')
  })
  return {
    wake: () => state.woken.abort(),
    lastPublished: () => state.lastPublished,
    stop: async () => {
      stop.abort()
      await running
    },
  }
}

async function relay(deps: RelayDeps, state: RelayState, stopped: AbortSignal): Promise<void> {
  const { db, leadership, messages, logger, onPublished } = deps
  const { batchSize = 500, pollMs = 200, leadershipCheckMs = 1000, gatherMs = 20, retryMs = 500 } = deps
  const stream = await unlessAborted(deps.stream, stopped)
  while (stream !== undefined && !stopped.aborted) {
    try {
      if (Date.now() >= state.leaderUntil) {
        const leader = await leadership.isLeader()
        state.leaderUntil = leader ? Date.now() + leadershipCheckMs : 0
        if (!leader) {
          state.tail = undefined
          await pause(leadershipCheckMs, stopped)
          continue
        }
      }
      if (state.tail === undefined) {
        await stream.ensure()
        state.tail = await stream.readTail()
        state.lastPublished = state.tail.cursor
      }
      state.woken = new AbortController()
      const batch = await readLog(db, state.tail.cursor, batchSize)
      if (batch.length > 0) {
        const result = await stream.publish(
          batch.map((event) => toFeedMessage(event, messages)),
          state.tail,
        )
        state.tail = result.tail
        state.lastPublished = result.tail.cursor
        if (result.published > 0) onPublished?.(result.published)
        if (result.failure !== undefined) throw result.failure
      }
      if (state.failures > 0) logger.info('the event feed resumed')
      state.failures = 0
      // A full batch: more is waiting. Otherwise rest until woken or the next poll, then gather.
      if (batch.length === batchSize) continue
      if (batch.length === 0) await pause(pollMs, stopped, state.woken.signal)
      await pause(gatherMs, stopped)
    } catch (error) {
      state.tail = undefined
      state.leaderUntil = 0
      // Said once per outage; the retries go on quietly.
      if (state.failures++ === 0)
        logger.warn({ err: error }, 'the event feed paused; it resumes from the end of the stream')
      else logger.debug({ err: error }, 'the event feed is still paused')
      if (state.failures % STEP_DOWN_AFTER === 0) {
        await leadership.release()
        await pause(leadershipCheckMs * 2, stopped)
      } else await pause(retryMs, stopped)
    }
  }
}
