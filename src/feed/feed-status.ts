import type { Database } from '../store/database.ts'
import { countLogAfter, type LogCursor, logHead } from '../store/event-log.ts'
import { unlessAborted } from './abort.ts'
import type { FeedStream } from './nats-stream.ts'

export type FeedStatus = {
  // The log cursor of the last feed message in the stream; undefined when there is none yet.
  lastPublished: LogCursor | undefined
  head: { events: number; position: bigint }
  behind: number
}

export async function readFeedStatus(db: Database, stream: FeedStream): Promise<FeedStatus> {
  const tail = await stream.readTail()
  const lastPublished = tail.cursor.position === 0n ? undefined : tail.cursor
  const [head, behind] = await Promise.all([logHead(db), countLogAfter(db, tail.cursor)])
  return { lastPublished, head, behind }
}

// How many events the stream lacks, from a cursor read within `timeoutMs` or the last one known.
export async function feedLag(
  db: Database,
  readCursor: () => Promise<LogCursor>,
  lastKnown: LogCursor | undefined,
  timeoutMs = 1000,
): Promise<number | undefined> {
  const read = await unlessAborted(
    readCursor().catch(() => undefined),
    AbortSignal.timeout(timeoutMs),
  )
  const cursor = read ?? lastKnown
  return cursor === undefined ? undefined : countLogAfter(db, cursor)
}
