import type { LoggedEvent } from '../event-log/reading.ts'
import type { Logger } from '../shared/logger.ts'
import { changeOf, encodedChangeFrame, type Frame } from './change-frame.ts'
import type { ChangeStream } from './change-stream.ts'

export type ChangeHubOptions = {
  logger: Logger
  // The most streams one owner holds open here (docs/live-changes.md, CHANGE_STREAMS_PER_OWNER).
  streamsPerOwner: number
  now?: () => number
  // A stream that sent nothing for this long gets a comment line (docs/live-changes.md: at least every 15 s).
  keepAliveMs?: number
  // How often streams are checked for keep-alive, stalled clients and token expiry: one timer for
  // all of them.
  tickMs?: number
}

export type ChangeHub = ReturnType<typeof createChangeHub>

type StreamsByOwner = Map<string, Set<ChangeStream>>

// The fan-out: the log follower hands every event it reads to the open streams of its owner. An
// event is turned into text once, however many streams its owner has open.
export function createChangeHub({
  logger,
  streamsPerOwner,
  now = Date.now,
  keepAliveMs = 10_000,
  tickMs = 1000,
}: ChangeHubOptions) {
  const byOwner: StreamsByOwner = new Map()
  let count = 0
  let closing = false

  const timer = setInterval(() => tendStreams(byOwner, now(), keepAliveMs), tickMs)

  return {
    now,
    streamsPerOwner,
    // 'closing' once the hub is closing, 'full' when the owner holds as many streams as allowed:
    // then the stream is not taken.
    add: (stream: ChangeStream): 'added' | 'closing' | 'full' => {
      if (closing) return 'closing'
      const streams = byOwner.get(stream.owner) ?? new Set()
      if (streams.has(stream)) return 'added'
      if (streams.size >= streamsPerOwner) return 'full'
      if (streams.size === 0) byOwner.set(stream.owner, streams)
      streams.add(stream)
      count++
      return 'added'
    },
    remove: (stream: ChangeStream) => {
      const streams = byOwner.get(stream.owner)
      if (!streams?.delete(stream)) return
      count--
      if (streams.size === 0) byOwner.delete(stream.owner)
    },
    deliver: (events: LoggedEvent[]) => {
      for (const event of events) {
        if (event.type === 'OwnerErased') endErased(byOwner, event.metadata)
        else if (event.type === 'PlantCreated') sendPlant(byOwner, logger, event)
      }
    },
    count: () => count,
    // Ends every stream cleanly (clients reconnect elsewhere) and takes no more.
    close: () => {
      closing = true
      clearInterval(timer)
      for (const streams of [...byOwner.values()])
        for (const stream of [...streams]) stream.end('shutting down')
    },
  }
}

// Each tick: a stream whose token expired ends, one that sent nothing for `keepAliveMs` gets a
// comment, and one whose client stopped reading is cut off.
function tendStreams(byOwner: StreamsByOwner, at: number, keepAliveMs: number) {
  for (const streams of byOwner.values()) {
    for (const stream of streams) {
      if (at >= stream.expiresAt) stream.end('the token has expired')
      else if (at - stream.lastSentAt >= keepAliveMs) stream.comment('keep-alive')
      stream.checkStalled()
    }
  }
}

// A created plant goes to its owner's open streams, as text encoded once for all of them.
function sendPlant(byOwner: StreamsByOwner, logger: Logger, event: LoggedEvent) {
  const { owner, pseudonym } = event.metadata
  if (owner === null) return
  const streams = byOwner.get(owner)
  if (!streams) return
  let frame: Frame
  try {
    frame = encodedChangeFrame(changeOf(event))
  } catch (error) {
    logger.error({ err: error, position: String(event.position) }, 'an event could not be sent to streams')
    return
  }
  for (const stream of streams) {
    // An owner with no key when the stream opened has one from their first plant on.
    stream.pseudonym ??= pseudonym
    stream.offer(frame)
  }
}

// Erasure (docs/erasure.md): the erased owner's streams end, on every instance. The notice names the owner
// while the erasure runs, and only the pseudonym once it has completed: each stream remembers
// its owner's. One whose pseudonym is not known yet (its open is still reading it) ends on a
// notice that names its owner.
function endErased(byOwner: StreamsByOwner, { owner, pseudonym }: LoggedEvent['metadata']) {
  const candidates = owner === null ? [...byOwner.values()] : [byOwner.get(owner) ?? new Set()]
  for (const streams of candidates) {
    for (const stream of [...streams]) {
      const known = stream.pseudonym
      if (known === pseudonym || (known === undefined && owner !== null))
        stream.end('the owner has been erased')
    }
  }
}
