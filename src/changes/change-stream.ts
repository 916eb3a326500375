import { commentFrame } from './change-frame.ts'

export type ChangeStreamOptions = {
  owner: string
  // When the caller's token expires, in milliseconds since the epoch: the stream ends then.
  expiresAt: number
  // Text waiting for a client that does not read, beyond which it is disconnected (it resumes
  // with Last-Event-ID). What the runtime has already taken sits in the kernel's socket buffers.
  maxBufferedBytes: number
  now: () => number
  onClosed: (stream: ChangeStream) => void
}

export type ChangeStream = ReturnType<typeof createChangeStream>

const encoder = new TextEncoder()

// One client's stream of server-sent events. Nothing is pushed at the client: the runtime pulls
// the body as the connection drains, so a client that stops reading stops the pulls, its text
// piles up here, and past the bound its connection is reset. Until `goLive`, live events are held
// while the stream catches up from the database; after it, an event at or below the last position
// sent is a duplicate and is dropped. Positions of one owner's events only grow (create-plant.ts).
export function createChangeStream({
  owner,
  expiresAt,
  maxBufferedBytes,
  now,
  onClosed,
}: ChangeStreamOptions) {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined
  let queue: string[] = []
  let queuedBytes = 0
  let waitingPull: (() => void) | undefined
  let waitingDrain: (() => void)[] = []
  let last = -1n
  let live = false
  let held: { position: bigint; frame: string }[] = []
  let heldBytes = 0
  let missed = false
  let closed = false

  const settle = () => {
    waitingPull?.()
    waitingPull = undefined
    for (const drained of waitingDrain) drained()
    waitingDrain = []
  }
  const finish = (close: (c: ReadableStreamDefaultController<Uint8Array>) => void) => {
    if (closed) return
    closed = true
    held = []
    try {
      if (controller) close(controller)
    } catch {
      // The client went away first: the body is already closed.
    }
    queue = []
    settle()
    onClosed(stream)
  }
  const write = (frame: string) => {
    if (closed) return
    stream.lastSentAt = now()
    if (waitingPull && controller) {
      controller.enqueue(encoder.encode(frame))
      settle()
      return
    }
    queue.push(frame)
    queuedBytes += frame.length
    // An error with no reason resets the connection without the runtime logging it. It is raised
    // on a later turn: Bun leaves the connection open when a body errors in the same turn as a
    // chunk was enqueued (found with group commit, whose batches arrive in one turn).
    if (queuedBytes > maxBufferedBytes) finish((c) => setTimeout(() => c.error(undefined), 0))
  }

  const body = new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c
        c.enqueue(encoder.encode(commentFrame('connected')))
      },
      pull: (c) => {
        if (queue.length === 0) return new Promise<void>((resolve) => (waitingPull = resolve))
        c.enqueue(encoder.encode(queue.join('')))
        queue = []
        queuedBytes = 0
        settle()
      },
      cancel: () => finish(() => {}),
    },
    { highWaterMark: 0 },
  )

  const stream = {
    owner,
    expiresAt,
    lastSentAt: now(),
    body,
    isClosed: () => closed,
    // The last position sent, or where the stream started.
    lastPosition: () => last,
    // Where the stream starts: events up to `position` are not sent.
    startAfter: (position: bigint) => {
      last = position
    },
    // An event read by the catch-up, in position order.
    sendCaughtUp: (position: bigint, frame: string) => {
      if (position <= last) return
      last = position
      write(frame)
    },
    // An event from the live log.
    offer: (position: bigint, frame: string) => {
      if (closed) return
      if (live) return stream.sendCaughtUp(position, frame)
      if (missed) return
      heldBytes += frame.length
      held.push({ position, frame })
      if (heldBytes > maxBufferedBytes) {
        held = []
        heldBytes = 0
        missed = true
      }
    },
    // Sends the held events above the last position and goes live, unless some were dropped
    // while holding: then the caller reads the database again first.
    goLive: (): boolean => {
      const wasMissed = missed
      const waiting = held
      held = []
      heldBytes = 0
      missed = false
      if (wasMissed) return false
      for (const { position, frame } of waiting) stream.sendCaughtUp(position, frame)
      live = true
      return true
    },
    // Resolves once the runtime has taken everything written so far (or the stream closed).
    drained: (): Promise<void> =>
      queue.length === 0 || closed ? Promise.resolve() : new Promise((resolve) => waitingDrain.push(resolve)),
    comment: (text: string) => write(commentFrame(text)),
    // A clean end: what is queued still goes out, then the body ends and the client reconnects.
    end: (reason: string) =>
      finish((c) => {
        c.enqueue(encoder.encode(queue.join('') + commentFrame(reason)))
        c.close()
      }),
  }
  return stream
}
