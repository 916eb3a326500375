import type { Logger } from '../logger.ts'
import type { Executor } from '../store/database.ts'
import { type LoggedEvent, logCursorNow, readLog } from '../store/event-log.ts'

export type LogFollowerDeps = {
  // Where the log is read: the primary, or a replica of it.
  db: Executor
  onEvents: (events: LoggedEvent[]) => void
  logger: Logger
}

// How often the log is read when nothing woke the follower: a missed notification, an import.
const POLL_MS = 200
// The least time between two reads: under a stream of creates, wakes gather into one read.
const GATHER_MS = 10
const BATCH_SIZE = 1000

// The one reader of the log in this process. It reads the log as the feed does (event-log.ts),
// gap-free: an event whose transaction commits late is read late, never skipped. It starts with
// the transactions that commit from now on; the streams' catch-up reads cover what came before.
export async function startLogFollower({ db, onEvents, logger }: LogFollowerDeps) {
  let cursor = await logCursorNow(db)
  let stopped = false
  // Set by a wake, cleared as a read starts: a wake during the read cuts the rest after it short.
  let woken = false
  let rouse = () => {}
  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) return resolve()
      const timer = setTimeout(resolve, ms)
      rouse = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  const wake = () => {
    woken = true
    rouse()
  }

  const run = async () => {
    let failing = false
    while (!stopped) {
      woken = false
      try {
        const events = await readLog(db, cursor, BATCH_SIZE)
        const last = events.at(-1)
        if (last) {
          cursor = { transactionId: last.transactionId, position: last.position }
          onEvents(events)
        }
        if (failing) logger.info('the change streams follow the log again')
        failing = false
        if (events.length === BATCH_SIZE) continue
        await rest(POLL_MS)
      } catch (error) {
        if (!failing) logger.warn({ err: error }, 'the change streams cannot read the log; retrying')
        failing = true
        await rest(POLL_MS * 5)
      }
      await new Promise((resolve) => setTimeout(resolve, GATHER_MS))
    }
  }
  const running = run()

  return {
    // Something may have been appended: read the log now rather than at the next poll.
    wake,
    stop: async () => {
      stopped = true
      wake()
      await running
    },
  }
}
