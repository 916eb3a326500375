import type { Logger } from '../shared/logger.ts'
import { postgresClient } from '../store/postgres-client.ts'

const CHANNEL = 'plant_store_appended'
// The least time between two notifications this instance sends: a burst of creates costs one. Each
// is a transaction, and a wake-up of every instance; a tenth of a second keeps other instances'
// change streams well inside their second (the poll is 0.2 s) at a tenth of the transactions of 10 ms.
const EVERY_MS = 100

export type NoticeOptions = { url: string; onNotice: () => void; logger: Logger }

// How the instances sharing a PostgreSQL database tell each other that they appended events.
// LISTEN on a connection of its own (postgres.js listens again after a reconnect) and NOTIFY
// outside the creates' transactions: a NOTIFY inside them would make every create's commit queue
// on PostgreSQL's notification lock. A lost notification costs latency only: followers also poll.
export function postgresNotices({ url, onNotice, logger }: NoticeOptions) {
  const sql = postgresClient(url, {
    max: 1,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: 'plant-store' },
  })
  // Each (re)connection may have missed notifications: read the log once then too.
  sql.listen(CHANNEL, onNotice, onNotice).catch((error: unknown) => {
    logger.warn({ err: error }, 'LISTEN failed; the change streams poll the log instead')
  })
  // One NOTIFY at a time, EVERY_MS after the one before: the calls meanwhile make one more.
  let sending = false
  let again = false
  const notify = async () => {
    again = true
    if (sending) return
    sending = true
    while (again) {
      again = false
      try {
        await sql.notify(CHANNEL, '')
      } catch (error) {
        logger.debug({ err: error }, 'NOTIFY failed; other instances see the events at their next poll')
      }
      await new Promise((resolve) => setTimeout(resolve, EVERY_MS))
    }
    sending = false
  }
  return { notify, close: () => sql.end({ timeout: 1 }) }
}
