import type { LogFollower } from '../follower/follower.ts'
import type { Logger } from '../shared/logger.ts'
import type { Tracing } from '../tracing/tracing.ts'
import { type MessageSettings, type PublishedMessage, toPublishedMessage } from './cloud-event.ts'
import type { Leadership } from './leadership.ts'
import type { FeedStream, Tail } from './nats-stream.ts'

export type RelayDeps = {
  // The process's follower of the log: the relay takes its events, and reads what it is behind by.
  follower: Pick<LogFollower, 'eventsAfter' | 'advanced' | 'position' | 'hold'>
  // Resolves once NATS is reachable (it may never be, while the relay waits).
  stream: Promise<FeedStream>
  leadership: Leadership
  messages: MessageSettings
  logger: Logger
  // With tracing on, each message whose event was made by a traced request is published in a span,
  // the child of that request's.
  tracing?: Tracing
  onPublished?: (count: number) => void
  batchSize?: number
  // The longest wait for the follower to move on before the relay looks again.
  pollMs?: number
  // How often a follower tries to become the leader, and the leader checks it still is.
  leadershipCheckMs?: number
  // The wait before a round that failed is tried again. NATS reconnects by itself (see
  // feed-service.ts); this only spaces the rounds that fail until it has.
  retryMs?: number
}

export type Relay = {
  // The log position of the last message known to be in the stream.
  lastPublished: () => bigint | undefined
  stop: () => Promise<void>
}

// Failed rounds in a row after which a leader steps down for a while: perhaps only this
// instance cannot reach NATS, and another can.
const STEP_DOWN_AFTER = 3

// Publishes the log, in position order, from where the stream ends, as the process's follower
// reads it (no read of its own unless it is behind what the follower keeps). Each round reads the
// stream's tail again after any failure, so a crash, a lost ack or a competing instance never
// makes it skip or repeat an event: the stream, not memory, says what is in it.
export function runRelay(deps: RelayDeps): Relay {
  const stop = new AbortController()
  const seen: Seen = { lastPublished: undefined }
  const running = relay(deps, seen, stop.signal).catch((error: unknown) => {
    if (!stop.signal.aborted) deps.logger.error({ err: error }, 'the event feed stopped')
  })
  return {
    lastPublished: () => seen.lastPublished,
    stop: async () => {
      stop.abort()
      await running
    },
  }
}

// What the loop shares with `lastPublished`.
type Seen = {
  // The log position of the last message known to be in the stream, kept across failures.
  lastPublished: bigint | undefined
}

async function relay(deps: RelayDeps, seen: Seen, stopped: AbortSignal): Promise<void> {
  const { follower, leadership, messages, logger, onPublished, tracing } = deps
  const { batchSize = 500, pollMs = 1000, leadershipCheckMs = 1000, retryMs = 500 } = deps
  const stream = await Promise.race([deps.stream, aborted(stopped)])
  // Where the stream ends, as last read or published; undefined when it must be read again.
  let tail: Tail | undefined
  // Every event of the log up to here is in the stream or is never published (an erased owner's:
  // the follower leaves their PlantCreated out, toPublishedMessage a completed erasure's notice). At or
  // past the tail, so that a run of such events is read once, not at every round; it starts from
  // the tail again whenever the tail is read again.
  let cursor = 0n
  // Until when this instance is known to lead without asking again.
  let leaderUntil = 0
  // Failed rounds in a row.
  let failures = 0
  // The follower reads the log while this instance leads.
  let release: (() => void) | undefined
  while (stream && !stopped.aborted) {
    try {
      if (Date.now() >= leaderUntil) {
        const leader = await leadership.isLeader()
        leaderUntil = leader ? Date.now() + leadershipCheckMs : 0
        if (!leader) {
          release?.()
          release = undefined
          tail = undefined
          await pause(leadershipCheckMs, stopped)
          continue
        }
      }
      release ??= follower.hold()
      if (tail === undefined) {
        await stream.ensure()
        tail = await stream.readTail()
        cursor = tail.position
        seen.lastPublished = tail.position
      }
      // A short batch holds every event up to where the follower stood before it was asked.
      const upTo = follower.position() ?? 0n
      const batch = await follower.eventsAfter(cursor, batchSize)
      const publishable = batch.flatMap((event) => toPublishedMessage(event, messages) ?? [])
      if (publishable.length > 0) {
        const spans = tracing && publishSpans(tracing, publishable, messages)
        const result = await stream.publish(publishable, tail)
        spans?.(result.tail.position, result.failure)
        tail = result.tail
        seen.lastPublished = result.tail.position
        if (result.published > 0) onPublished?.(result.published)
        if (result.failure !== undefined) throw result.failure
      }
      const last = batch.at(-1)?.position ?? cursor
      cursor = batch.length === batchSize ? last : [cursor, last, upTo].reduce(max)
      if (failures > 0) logger.info('the event feed resumed')
      failures = 0
      // Until the follower moves past the cursor (it gathers wakes into reads), or a while passes
      // and leadership is checked again.
      if ((follower.position() ?? 0n) <= cursor)
        await follower.advanced(Math.min(pollMs, leadershipCheckMs), stopped)
    } catch (error) {
      tail = undefined
      leaderUntil = 0
      // Said once per outage; the retries go on quietly.
      if (failures++ === 0)
        logger.warn({ err: error }, 'the event feed paused; it resumes from the end of the stream')
      else logger.debug({ err: error }, 'the event feed is still paused')
      if (failures % STEP_DOWN_AFTER === 0) {
        await leadership.release()
        await pause(leadershipCheckMs * 2, stopped)
      } else await pause(retryMs, stopped)
    }
  }
  release?.()
}

// A span per message that carries a trace context, the child of that context; the returned
// function ends them once the stream has answered: those up to `stored` went in, the others failed.
function publishSpans(tracing: Tracing, publishable: PublishedMessage[], { subjectPrefix }: MessageSettings) {
  const name = `send ${subjectPrefix}.events.PlantCreated`
  const spans = publishable.flatMap(({ id, traceparent }) => {
    if (traceparent === undefined) return []
    const attributes = {
      'messaging.system': 'nats',
      'messaging.operation.type': 'send',
      'messaging.message.id': id,
    }
    const span = tracing.startSpan(name, { kind: 'producer', parent: traceparent, attributes })
    return [{ position: BigInt(id), span }]
  })
  return (stored: bigint, failure: unknown) => {
    for (const { position, span } of spans)
      span.end(position <= stored ? {} : { error: failure ?? 'the stream did not take it' })
  }
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b)

// Waits `ms`, or less when a signal aborts.
export function pause(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return aborted(AbortSignal.timeout(ms), ...signals)
}

// Resolves once any of `signals` aborts, and takes its listeners with it: a long-lived signal
// (the relay's stop) waited on in a loop must not gather one per wait, as `AbortSignal.any` does
// (denoland/deno#24842, nodejs/node#55351; still so on Deno 2.9).
function aborted(...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal.aborted)) return resolve()
    const done = () => {
      for (const signal of signals) signal.removeEventListener('abort', done)
      resolve()
    }
    for (const signal of signals) signal.addEventListener('abort', done)
  })
}
