import type { Logger } from '../logger.ts'
import type { Executor } from '../store/database.ts'
import { changeFrame } from './change-frame.ts'
import type { ChangeHub } from './change-hub.ts'
import { createEventBody, type EventBody } from './event-body.ts'
import { readOwnerChanges, readOwnerHead } from './owner-changes.ts'

export type ChangeStreamDeps = { db: Executor; hub: ChangeHub; logger: Logger; catchUpBatch: number }

// Text waiting for a client that does not read, beyond which it is disconnected (it resumes with
// Last-Event-ID); the same bound holds the live events that wait while a stream catches up.
const MAX_BUFFERED_BYTES = 1024 * 1024

export type ChangeRequest = {
  owner: string
  // Where the caller stopped; undefined: at the caller's head now.
  after?: bigint
  // When the caller's token expires, in milliseconds since the epoch: the stream ends then.
  expiresAt: number
}

// One client's stream, as the hub sees it.
export type ChangeStream = EventBody & {
  owner: string
  expiresAt: number
  // An event from the live log.
  offer: (position: bigint, frame: string) => void
}

type Frame = { position: bigint; frame: string }

// Joins the database and the live log without a gap or a duplicate: the stream takes live events
// (held) before the first read, so whatever commits after that read's snapshot reaches it live;
// whatever the reads saw is sent from them, and any event at or below the last position sent is
// dropped. Positions of one owner's events only grow (create-plant.ts). The first read happens
// before the response, so an unreachable database is a clean 503; the next ones each time the
// client took what was sent, so a long catch-up never piles up here. Undefined once the hub closes.
export async function openChangeStream(
  { db, hub, logger, catchUpBatch }: ChangeStreamDeps,
  { owner, after, expiresAt }: ChangeRequest,
): Promise<ReadableStream<Uint8Array> | undefined> {
  let last = -1n
  // Live events that arrive while the stream catches up: held, or past the bound dropped (then the
  // database is read again).
  let held: { frames: Frame[]; bytes: number } | 'dropped' | 'live' = { frames: [], bytes: 0 }

  const body = createEventBody({
    maxBufferedBytes: MAX_BUFFERED_BYTES,
    now: hub.now,
    onDrained: () =>
      catchUp().catch((error: unknown) => {
        logger.warn({ err: error }, 'a change stream could not catch up; it ends and the client resumes')
        body.end('catching up failed; reconnect')
      }),
    onClosed: () => hub.remove(stream),
  })
  // Sends the frames above the last position sent, in one write; false when there was none.
  const send = (frames: Frame[]): boolean => {
    let text = ''
    for (const { position, frame } of frames) {
      if (position <= last) continue
      last = position
      text += frame
    }
    if (text !== '') body.write(text)
    return text !== ''
  }
  // Sends the held events and goes live, unless some were dropped: then the database is read again.
  const goLive = () => {
    const waiting = held
    held = waiting === 'dropped' ? { frames: [], bytes: 0 } : 'live'
    if (typeof waiting === 'object') send(waiting.frames)
  }
  // Reads on until something was sent or the stream is live; a short read has caught up.
  const catchUp = async () => {
    while (held !== 'live' && !body.isClosed()) {
      const found = await readOwnerChanges(db, owner, last, catchUpBatch)
      const sent = send(found.map((change) => ({ position: change.position, frame: changeFrame(change) })))
      if (found.length < catchUpBatch) goLive()
      if (sent) return
    }
  }
  const stream: ChangeStream = {
    ...body,
    owner,
    expiresAt,
    offer: (position, frame) => {
      if (held === 'live') send([{ position, frame }])
      else if (held !== 'dropped') {
        held.frames.push({ position, frame })
        held.bytes += frame.length
        if (held.bytes > MAX_BUFFERED_BYTES) held = 'dropped'
      }
    },
  }

  if (!hub.add(stream)) return undefined
  try {
    last = after ?? (await readOwnerHead(db, owner))
    if (after === undefined) goLive()
    else await catchUp()
  } catch (error) {
    hub.remove(stream)
    throw error
  }
  return stream.body
}
