import type { Logger } from '../logger.ts'
import type { Executor } from '../store/database.ts'
import { changeFrame, type PlantChange } from './change-frame.ts'
import type { ChangeHub } from './change-hub.ts'
import { type ChangeStream, createChangeStream } from './change-stream.ts'
import { readOwnerChanges, readOwnerHead } from './owner-changes.ts'

export type OpenChangeStreamDeps = {
  db: Executor
  hub: ChangeHub
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

// Joins the database and the live log without a gap or a duplicate: the stream takes live events
// (held) before the first read, so whatever commits after that read's snapshot reaches it live;
// whatever the read saw is sent from the read, and the held copies at or below it are dropped.
// The first read happens before the response, so an unreachable database is a clean 503.
export async function openChangeStream(
  { db, hub, logger, maxBufferedBytes, catchUpBatch }: OpenChangeStreamDeps,
  { owner, after, expiresAt }: ChangeRequest,
): Promise<ReadableStream<Uint8Array>> {
  const stream = createChangeStream({
    owner,
    expiresAt,
    maxBufferedBytes,
    now: hub.now,
    onClosed: hub.remove,
  })
  if (!hub.add(stream)) throw new ShuttingDown('the service is shutting down; reconnect')
  try {
    const first = after === undefined ? [] : await readOwnerChanges(db, owner, after, catchUpBatch)
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
      if (found.length < catchUpBatch && stream.goLive()) return
      // Read on only once the client took the last batch: a long catch-up never piles up here.
      await stream.drained()
      found = await readOwnerChanges(db, owner, stream.lastPosition(), catchUpBatch)
    }
  }
}
