import type { Logger } from '../logger.ts'
import type { LoggedEvent } from '../store/event-log.ts'
import { changeFrame, changeOf } from './change-frame.ts'
import type { ChangeStream } from './change-stream.ts'

export type ChangeHubOptions = {
  logger: Logger
  now?: () => number
  // A stream that sent nothing for this long gets a comment line (CONTRACT §9: at least every 15 s).
  keepAliveMs?: number
  // How often streams are checked for keep-alive and token expiry: one timer for all of them.
  tickMs?: number
}

export type ChangeHub = ReturnType<typeof createChangeHub>

// The fan-out: the log follower hands every event it reads to the open streams of its owner. An
// event is turned into text once, however many streams its owner has open.
export function createChangeHub({
  logger,
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
      }
    }
  }
  const timer = setInterval(tick, tickMs)

  return {
    now,
    // False once the hub is closing: no new stream is taken.
    add: (stream: ChangeStream): boolean => {
      if (closing) return false
      const streams = byOwner.get(stream.owner) ?? new Set()
      if (streams.size === 0) byOwner.set(stream.owner, streams)
      if (!streams.has(stream)) count++
      streams.add(stream)
      return true
    },
    remove: (stream: ChangeStream) => {
      const streams = byOwner.get(stream.owner)
      if (!streams?.delete(stream)) return
      count--
      if (streams.size === 0) byOwner.delete(stream.owner)
    },
    deliver: (events: LoggedEvent[]) => {
      for (const event of events) {
        const streams = byOwner.get(event.metadata.owner)
        if (!streams) continue
        let frame: string
        try {
          frame = changeFrame(changeOf(event))
        } catch (error) {
          logger.error(
            { err: error, position: String(event.position) },
            'an event could not be sent to streams',
          )
          continue
        }
        for (const stream of streams) stream.offer(event.position, frame)
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
