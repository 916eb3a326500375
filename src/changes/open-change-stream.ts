import type { LogFollower } from '../follower/follower.ts'
import { Failure } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import { within } from '../shared/time-limit.ts'
import { encodedChangeFrame } from './change-frame.ts'
import type { ChangeHub } from './change-hub.ts'
import type { ChangeReads } from './change-reads.ts'
import { type CaughtUp, createChangeStream } from './change-stream.ts'

export type OpenChangeStreamDeps = {
  reads: ChangeReads
  hub: ChangeHub
  follower: Pick<LogFollower, 'ready' | 'hold'>
  logger: Logger
  maxBufferedBytes: number
  stallMs: number
  catchUpBatch: number
}

export type ChangeRequest = {
  owner: string
  // Where the caller stopped; undefined: at the caller's head now.
  after?: bigint
  expiresAt: number
}

const READY_WAIT_MS = 5000
// A refused stream is tried again soon: another instance, or this one once it reads the log.
const RECONNECT = { 'retry-after': '1' }

// Joins the database and the live log without a gap or a duplicate: the stream takes live events
// (held) before the first read, so whatever commits after that read's snapshot reaches it live;
// whatever the reads saw is sent from them, and the held copies at or below it are dropped.
// The reads show everything up to the follower's position when asked, and stop there: above it a
// late commit may still come, live (change-reads.ts).
// The first read happens before the response, so an unreachable database is a clean 503.
export async function openChangeStream(
  { reads, hub, follower, logger, maxBufferedBytes, stallMs, catchUpBatch }: OpenChangeStreamDeps,
  { owner, after, expiresAt }: ChangeRequest,
): Promise<ReadableStream<Uint8Array>> {
  const readAfter = async (position: bigint): Promise<CaughtUp> => {
    try {
      const found = await reads.changesAfter(owner, position, catchUpBatch)
      return { frames: found.map(encodedChangeFrame), complete: found.length < catchUpBatch }
    } catch (error) {
      logger.warn({ err: error }, 'a change stream could not catch up; it ends and the client resumes')
      throw error
    }
  }
  // The follower reads the log while a stream is open.
  const release = follower.hold()
  const stream = createChangeStream({
    owner,
    expiresAt,
    maxBufferedBytes,
    stallMs,
    now: hub.now,
    readAfter,
    onClosed: (closed) => {
      hub.remove(closed)
      release()
    },
  })
  const refuse = (error: Error) => {
    release()
    return error
  }
  // Only until the follower stands somewhere (a database down since the start: a 503).
  const following = await within(
    follower.ready().then(() => true),
    READY_WAIT_MS,
  )
  if (!following)
    throw refuse(new Failure('UNAVAILABLE', 'the event log cannot be read yet; reconnect', RECONNECT))
  const added = hub.add(stream)
  if (added === 'closing')
    throw refuse(new Failure('UNAVAILABLE', 'the service is shutting down; reconnect', RECONNECT))
  if (added === 'full')
    throw refuse(
      new Failure(
        'TOO_MANY_STREAMS',
        `this caller already has ${hub.streamsPerOwner} open change streams here; close one or retry later`,
        { 'retry-after': '5' },
      ),
    )
  try {
    // Read once the hub delivers to the stream: a notice read meanwhile finds it (change-hub.ts).
    const start = async () => {
      if (after === undefined) return stream.startAfter(await reads.head(owner), true)
      stream.startAfter(after, false)
      await stream.catchUp()
    }
    const [pseudonym] = await Promise.all([reads.pseudonym(owner), start()])
    stream.pseudonym ??= pseudonym
  } catch (error) {
    hub.remove(stream)
    throw refuse(error as Error)
  }
  return stream.body
}
