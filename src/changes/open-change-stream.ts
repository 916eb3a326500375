import type { Logger } from '../logger.ts'
import type { Executor } from '../store/database.ts'
import { within } from '../time-limit.ts'
import { changeFrame, type PlantChange } from './change-frame.ts'
import type { ChangeHub } from './change-hub.ts'
import { type ChangeStream, createChangeStream } from './change-stream.ts'
import type { LogFollower } from './log-follower.ts'
import { readOwnerChanges, readOwnerHead } from './owner-changes.ts'

export type OpenChangeStreamDeps = {
  db: Executor
  hub: ChangeHub
  follower: Pick<LogFollower, 'ready' | 'position'>
  logger: Logger
  maxBufferedBytes: number
  catchUpBatch: number
}

export type ChangeRequest = {
  owner: string
  // Where the caller stopped; undefined: at the caller's head now.
  after?: bigint
  expiresAt: number
}

export class ShuttingDown extends Error {
  override name = 'ShuttingDown'
}

export class NotFollowing extends Error {
  override name = 'NotFollowing'
}

const READY_WAIT_MS = 5000

// Joins the database and the live log without a gap or a duplicate: the stream takes live events
// (held) before the first read, so whatever commits after that read's snapshot reaches it live;
// whatever the read saw is sent from the read, and the held copies at or below it are dropped.
// The reads stop at the follower's position: above it a late commit may still come, live.
// The first read happens before the response, so an unreachable database is a clean 503.
export async function openChangeStream(
  { db, hub, follower, logger, maxBufferedBytes, catchUpBatch }: OpenChangeStreamDeps,
  { owner, after, expiresAt }: ChangeRequest,
): Promise<ReadableStream<Uint8Array>> {
  const stream = createChangeStream({
    owner,
    expiresAt,
    maxBufferedBytes,
    now: hub.now,
    onClosed: hub.remove,
  })
  // Only until the follower first stands somewhere (a database down since the start: a 503).
  if (
    (await within(
      follower.ready.then(() => true),
      READY_WAIT_MS,
    )) === undefined
  )
    throw new NotFollowing('the event log cannot be read yet; reconnect')
  if (!hub.add(stream)) throw new ShuttingDown('the service is shutting down; reconnect')
  let upTo = follower.position() ?? 0n
  try {
    const first = after === undefined ? [] : await readOwnerChanges(db, owner, after, upTo, catchUpBatch)
    stream.startAfter(after ?? (await readOwnerHead(db, owner)))
    void catchUp(stream, first).catch((error: unknown) => {
      logger.warn({ err: error }, 'a change stream could not catch up; it ends and the client resumes')
      stream.end('catching up failed; reconnect')
    })
  } catch (error) {
    hub.remove(stream)
    throw error
  }
  return stream.body

  async function catchUp(stream: ChangeStream, first: PlantChange[]) {
    for (let found = first; ; ) {
      for (const change of found) stream.sendCaughtUp(change.position, changeFrame(change))
      if (stream.isClosed()) return
      if (found.length < catchUpBatch) {
        if (stream.goLive()) return
        upTo = follower.position() ?? upTo
      }
      // Read on only once the client took the last batch: a long catch-up never piles up here.
      await stream.drained()
      found = await readOwnerChanges(db, owner, stream.lastPosition(), upTo, catchUpBatch)
    }
  }
}
