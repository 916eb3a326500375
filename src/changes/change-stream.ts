import { commentFrame, type Frame } from './change-frame.ts'
import { frameQueue } from './frame-queue.ts'
import { heldFrames } from './held-frames.ts'

// A batch of the owner's events read from the database; `complete` when nothing came after it.
export type CaughtUp = { frames: Frame[]; complete: boolean }

export type ChangeStreamOptions = {
  owner: string
  // When the caller's token expires, in milliseconds since the epoch: the stream ends then.
  expiresAt: number
  // Bytes of live events that may wait for the client; past them they are dropped and read again
  // from the database once the client takes more.
  maxBufferedBytes: number
  // A client that took nothing for this long after its events passed the bound does not read: it
  // is disconnected (and resumes with Last-Event-ID).
  stallMs: number
  now: () => number
  // The owner's events after a position, oldest first, a batch at a time.
  readAfter: (position: bigint) => Promise<CaughtUp>
  onClosed: (stream: ChangeStream) => void
}

export type ChangeStream = ReturnType<typeof createChangeStream>

const encoder = new TextEncoder()

// One client's stream of server-sent events. Nothing is pushed at the client: the runtime pulls
// the body as the connection drains. While the stream catches up, each pull with nothing left
// reads the next batch from the database, so a long catch-up holds one batch here whatever the
// client's speed, and live events wait (held) until it has caught up. Live, events wait here for
// the next pull; past the bound the stream drops them and catches up again, unless its client took
// nothing for `stallMs`: then its connection is reset. Positions of one owner's events only grow
// (create-plant.ts), so an event at or below the last position taken is a duplicate.
export function createChangeStream({
  owner,
  expiresAt,
  maxBufferedBytes,
  stallMs,
  now,
  readAfter,
  onClosed,
}: ChangeStreamOptions) {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined
  const queue = frameQueue()
  // The newest position taken for the client, queued or handed out.
  let last = -1n
  let live = false
  const held = heldFrames(maxBufferedBytes)
  let lastPullAt = now()
  // Events were dropped since the client last pulled.
  let behind = false
  let waitingPull: (() => void) | undefined
  let closed = false

  const finish = (close: (c: ReadableStreamDefaultController<Uint8Array>) => void) => {
    if (closed) return
    closed = true
    held.release()
    queue.drain()
    try {
      if (controller) close(controller)
    } catch {
      // The client went away first: the body is already closed.
    }
    waitingPull?.()
    waitingPull = undefined
    onClosed(stream)
  }
  // An error with no reason resets the connection without the runtime logging it. It is raised on
  // a later turn: Bun leaves the connection open when a body errors in the same turn as a chunk was
  // enqueued (found with group commit, whose batches arrive in one turn).
  const reset = () => finish((c) => setTimeout(() => c.error(undefined), 0))
  const isStalled = () => behind && now() - lastPullAt >= stallMs

  const take = (position: bigint | undefined, bytes: Uint8Array) => {
    if (position !== undefined) last = position
    stream.lastSentAt = now()
    if (waitingPull && controller) {
      controller.enqueue(bytes)
      if (position !== undefined) queue.handedOutTo(position)
      waitingPull()
      waitingPull = undefined
      return
    }
    queue.push({ position, bytes })
    if (live && queue.bytes() > maxBufferedBytes) overflow()
  }
  const overflow = () => {
    behind = true
    if (isStalled()) return reset()
    queue.drain()
    last = queue.handedOut()
    live = false
  }
  const hold = (frame: Frame) => {
    if (!held.hold(frame)) behind = true
  }
  // Sends the held events and goes live, unless some were dropped: then the next read covers them.
  // The held events with what the read queued may pass the bound: the queue is dropped there and
  // read again from the database, from before it, and so must the held events after it be (taken,
  // they would move `last` past the dropped ones).
  const goLive = () => {
    const { frames, missed } = held.release()
    if (missed) return
    live = true
    for (const frame of frames) {
      if (frame.position > last) take(frame.position, frame.bytes)
      if (!live) return
    }
  }
  const catchUp = async () => {
    const { frames, complete } = await readAfter(last)
    if (closed) return
    for (const { position, bytes } of frames) if (position > last) take(position, bytes)
    if (complete) goLive()
  }

  const body = new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c
        c.enqueue(encoder.encode(commentFrame('connected')))
      },
      pull: async (c): Promise<void> => {
        lastPullAt = now()
        behind = false
        try {
          while (queue.length() === 0 && !live && !closed) await catchUp()
        } catch {
          stream.end('catching up failed; reconnect')
          return
        }
        if (closed) return
        if (queue.length() > 0) return c.enqueue(queue.nextChunk())
        await new Promise<void>((resolve) => (waitingPull = resolve))
      },
      cancel: () => finish(() => {}),
    },
    { highWaterMark: 0 },
  )

  const stream = {
    owner,
    // The owner's pseudonym once known (event-log/pseudonyms.ts): their OwnerErased ends the stream.
    pseudonym: undefined as string | undefined,
    expiresAt,
    lastSentAt: now(),
    body,
    // Starts after `position`: live at once when `caughtUp` (the stream opened at the owner's
    // head), else the first pull reads the database from there.
    startAfter: (position: bigint, caughtUp: boolean) => {
      last = position
      queue.handedOutTo(position)
      if (caughtUp) goLive()
    },
    // Reads the first batch now: an unreachable database then fails the request, not the stream.
    catchUp,
    // An event from the live log.
    offer: (frame: Frame) => {
      if (closed) return
      if (!live) return hold(frame)
      if (frame.position > last) take(frame.position, frame.bytes)
    },
    // Called regularly: a client that stopped reading is cut off even when no event comes.
    checkStalled: () => {
      if (!closed && isStalled()) reset()
    },
    comment: (text: string) => {
      if (!closed) take(undefined, encoder.encode(commentFrame(text)))
    },
    // A clean end: what is queued still goes out, then the body ends and the client reconnects.
    end: (reason: string) => {
      const rest = [...queue.drain(), encoder.encode(commentFrame(reason))]
      finish((c) => {
        for (const bytes of rest) c.enqueue(bytes)
        c.close()
      })
    },
  }
  return stream
}
