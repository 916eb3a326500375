import type { Logger } from '../logger.ts'
import type { LoggedEvent } from '../store/event-log.ts'
import { changeOf, encodedChangeFrame, type Frame } from './change-frame.ts'
import type { ChangeStream } from './change-stream.ts'

export type ChangeHubOptions = {
  logger: Logger
  // The most streams one owner holds open here (CONTRACT §9, CHANGE_STREAMS_PER_OWNER).
  streamsPerOwner: number
  now?: () => number
  // A stream that sent nothing for this long gets a comment line (CONTRACT §9: at least every 15 s).
  keepAliveMs?: number
  // How often streams are checked for keep-alive, stalled clients and token expiry: one timer for
  // all of them.
  tickMs?: number
}

export type ChangeHub = ReturnType<typeof createChangeHub>

// The fan-out: the log follower hands every event it reads to the open streams of its owner. An
// event is turned into text once, however many streams its owner has open.
export function createChangeHub({
  logger,
  streamsPerOwner,
  now = Date.now,
  keepAliveMs = 10_000,
  tickMs = 1000,
}: ChangeHubOptions) {
  const byOwner = new Map<string, Set<ChangeStream>>()
  let count = 0
  let closing = false

  const tick = () => {
    const at = now()
    for (const streams of byOwner.values()) {
      for (const stream of streams) {
        if (at >= stream.expiresAt) stream.end('the token has expired')
        else if (at - stream.lastSentAt >= keepAliveMs) stream.comment('keep-alive')
        stream.checkStalled()
      }
    }
  }
  const timer = setInterval(tick, tickMs)

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
        if (event.type !== 'PlantCreated' || event.metadata.owner === null) continue
        const streams = byOwner.get(event.metadata.owner)
        if (!streams) continue
        let frame: Frame
        try {
          frame = encodedChangeFrame(changeOf(event))
        } catch (error) {
          logger.error(
            { err: error, position: String(event.position) },
            'an event could not be sent to streams',
          )
          continue
        }
        for (const stream of streams) stream.offer(frame)
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
