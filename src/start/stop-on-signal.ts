import process from 'node:process'
import type { Logger } from '../shared/logger.ts'
import { within } from '../shared/time-limit.ts'
import type { RunningServer } from './serve.ts'
import type { ServiceParts } from './service-parts.ts'

// How long the parts (the feed, the log's reader, the pools, the embedded server) get to close
// once the requests are answered; a part that hangs does not hold the stop.
export const CLOSE_PARTS_MS = 10_000

export type StopDeps = {
  server: RunningServer
  parts: Pick<ServiceParts, 'changes' | 'stop'>
  logger: Logger
  requestTimeoutMs: number
  // Ends the process (main flushes the log first, within its own bound).
  exit: (code: number) => Promise<void>
}

// SIGTERM and SIGINT stop accepting, answer the requests in flight, close everything and exit 0:
// each step within its deadline, so that a stop ends whatever a client or stdout does.
export function stopOnSignals({ server, parts, logger, requestTimeoutMs, exit }: StopDeps): void {
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'draining requests in flight')
    // Open change streams would hold the drain until their clients left: end them first.
    await parts.changes.close()
    // Every request is answered within the deadline; a response body still being written to a
    // client that does not read (Deno does not reset that connection) is not waited for longer.
    await within(server.stop(), requestTimeoutMs)
    const closed = await within(
      parts.stop().then(() => true),
      CLOSE_PARTS_MS,
    )
    if (!closed) logger.warn({ waitedMs: CLOSE_PARTS_MS }, 'stopped without waiting for every part to close')
    logger.info('stopped')
    await exit(0)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
}
