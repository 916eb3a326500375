import type { Logger } from '../logger.ts'
import type { Database } from '../store/database.ts'
import { type LogCursor, readLog } from '../store/event-log.ts'
import { backoffDelay, sleep } from './backoff.ts'
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
}

// Failures in a row after which a leader steps down for a while.
const STEP_DOWN_AFTER = 3

export type Relay = {
  // Something was appended: read the log now rather than at the next poll.
  wake: () => void
  // The log cursor of the last message known to be in the stream.
  lastPublished: () => LogCursor | undefined
  stop: () => Promise<void>
}

// Publishes the log, in log order, from where the stream ends. Each round reads the stream's
// tail again after any failure, so a crash, a lost ack or a competing instance never makes it
// skip or repeat an event: the stream, not memory, says what is in it.
export function startRelay(deps: RelayDeps): Relay {
  const { db, leadership, messages, logger, onPublished } = deps
  const { batchSize = 500, pollMs = 200, leadershipCheckMs = 1000, gatherMs = 20 } = deps
  let stopped = false
  let woken = false
  let wakeUp: (() => void) | undefined
  let known: LogCursor | undefined
  let signalStop = () => {}
  const stopping = new Promise<undefined>((resolve) => {
    signalStop = () => resolve(undefined)
  })
  const pause = (ms: number) => Promise.race([sleep(ms), stopping])

  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopped) return resolve()
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        wakeUp = undefined
        resolve()
      }
      wakeUp = done
    })

  let leaderUntil = 0
  const stillLeader = async () => {
    if (Date.now() < leaderUntil) return true
    const leader = await leadership.isLeader()
    leaderUntil = leader ? Date.now() + leadershipCheckMs : 0
    return leader
  }

  const run = async () => {
    const stream = await Promise.race([deps.stream, stopping])
    if (stream === undefined) return
    let tail: Tail | undefined
    let failures = 0
    const recovered = () => {
      if (failures > 0) logger.info('the event feed resumed')
      failures = 0
    }
    while (!stopped) {
      try {
        if (!(await stillLeader())) {
          tail = undefined
          await pause(leadershipCheckMs)
          continue
        }
        if (tail === undefined) {
          await stream.ensure()
          tail = await stream.readTail()
          known = tail.cursor
        }
        woken = false
        const batch = await readLog(db, tail.cursor, batchSize)
        if (batch.length === 0) {
          recovered()
          await rest(pollMs)
          await pause(gatherMs)
          continue
        }
        const result = await stream.publish(
          batch.map((event) => toFeedMessage(event, messages)),
          tail,
        )
        tail = result.tail
        known = tail.cursor
        if (result.published > 0) onPublished?.(result.published)
        if (result.failure !== undefined) throw result.failure
        recovered()
        if (batch.length < batchSize) await pause(gatherMs)
      } catch (error) {
        tail = undefined
        leaderUntil = 0
        // Said once per outage; the retries go on quietly.
        if (failures === 0)
          logger.warn({ err: error }, 'the event feed paused; it resumes from the end of the stream')
        else logger.debug({ err: error }, 'the event feed is still paused')
        if (++failures % STEP_DOWN_AFTER === 0) {
          // Perhaps only this instance cannot reach NATS: let another lead for a while.
          await leadership.release()
          await pause(leadershipCheckMs * 2)
        } else await pause(backoffDelay(failures - 1))
      }
    }
  }
  const running = run().catch((error: unknown) => {
    if (!stopped) logger.error({ err: error }, 'the event feed stopped')
  })

  return {
    wake: () => {
      woken = true
      wakeUp?.()
    },
    lastPublished: () => known,
    stop: async () => {
      stopped = true
      signalStop()
      wakeUp?.()
      await running
    },
  }
}
