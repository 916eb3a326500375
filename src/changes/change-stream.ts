import { commentFrame, type Frame } from './change-frame.ts'
import { frameQueue } from './frame-queue.ts'
import { heldFrames } from './held-frames.ts'
import {
  closedStream,
  fellBehind,
  isNew,
  isStalled,
  needsRead,
  offered,
  openedStream,
  overflowed,
  pulled,
  taken,
  wentLive,
} from './stream-state.ts'

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
// nothing for `stallMs`: then its connection is reset. Where it stands, and how it moves, is
// changes/stream-state.ts; here are the queue, the reads and the body.
export function createChangeStream(options: ChangeStreamOptions) {
  const parts = streamParts(options, () => options.onClosed(stream))
  const stream = {
    owner: options.owner,
    // The owner's pseudonym once known (event-log/pseudonyms.ts): their OwnerErased ends the stream.
    pseudonym: undefined as string | undefined,
    expiresAt: options.expiresAt,
    get lastSentAt() {
      return parts.lastSentAt
    },
    body: streamBody(parts),
    // Starts after `position`: live at once when `caughtUp` (the stream opened at the owner's
    // head), else the first pull reads the database from there.
    startAfter: (position: bigint, caughtUp: boolean) => startAfter(parts, position, caughtUp),
    // Reads the first batch now: an unreachable database then fails the request, not the stream.
    catchUp: () => catchUp(parts),
    // An event from the live log.
    offer: (frame: Frame) => offer(parts, frame),
    // Called regularly: a client that stopped reading is cut off even when no event comes.
    checkStalled: () => {
      if (isStalled(parts.state, options.now(), options.stallMs)) reset(parts)
    },
    comment: (text: string) => {
      if (parts.state.phase !== 'closed') take(parts, undefined, encoder.encode(commentFrame(text)))
    },
    // A clean end: what is queued still goes out, then the body ends and the client reconnects.
    end: (reason: string) => end(parts, reason),
  }
  return stream
}

// What a stream works with: its options, where it stands, the frames queued for the client and
// the live ones held while it catches up, and the runtime's side of the body.
type StreamParts = ReturnType<typeof streamParts>

function streamParts(options: ChangeStreamOptions, closed: () => void) {
  return {
    options,
    state: openedStream(options.now()),
    queue: frameQueue(),
    held: heldFrames(options.maxBufferedBytes),
    controller: undefined as ReadableStreamDefaultController<Uint8Array> | undefined,
    // The runtime pulled with nothing queued: the next frame goes to it at once.
    waitingPull: undefined as (() => void) | undefined,
    lastSentAt: options.now(),
    closed,
  }
}

function streamBody(parts: StreamParts) {
  return new ReadableStream<Uint8Array>(
    {
      start: (controller) => {
        parts.controller = controller
        controller.enqueue(encoder.encode(commentFrame('connected')))
      },
      pull: (controller) => pull(parts, controller),
      cancel: () => finish(parts, () => {}),
    },
    { highWaterMark: 0 },
  )
}

// The runtime wants more: what is queued, else the next batch while catching up, else the next
// frame that comes.
async function pull(
  parts: StreamParts,
  controller: ReadableStreamDefaultController<Uint8Array>,
): Promise<void> {
  parts.state = pulled(parts.state, parts.options.now())
  try {
    while (needsRead(parts.state, parts.queue.length())) await catchUp(parts)
  } catch {
    end(parts, 'catching up failed; reconnect')
    return
  }
  if (parts.state.phase === 'closed') return
  if (parts.queue.length() > 0) return controller.enqueue(parts.queue.nextChunk())
  await new Promise<void>((resolve) => (parts.waitingPull = resolve))
}

function startAfter(parts: StreamParts, position: bigint, caughtUp: boolean) {
  parts.state = taken(parts.state, position)
  parts.queue.handedOutTo(position)
  if (caughtUp) goLive(parts)
}

async function catchUp(parts: StreamParts) {
  const { frames, complete } = await parts.options.readAfter(parts.state.last)
  if (parts.state.phase === 'closed') return
  for (const { position, bytes } of frames) if (isNew(parts.state, position)) take(parts, position, bytes)
  if (complete) goLive(parts)
}

function offer(parts: StreamParts, frame: Frame) {
  const fate = offered(parts.state, frame.position)
  if (fate === 'take') take(parts, frame.position, frame.bytes)
  else if (fate === 'hold' && !parts.held.hold(frame)) parts.state = fellBehind(parts.state)
}

// Sends the held events and goes live, unless some were dropped: then the next read covers them.
// The held events with what the read queued may pass the bound: the queue is dropped there and
// read again from the database, from before it, and so must the held events after it be (taken,
// they would move `last` past the dropped ones).
function goLive(parts: StreamParts) {
  const { frames, missed } = parts.held.release()
  if (missed) return
  parts.state = wentLive(parts.state)
  for (const frame of frames) {
    if (isNew(parts.state, frame.position)) take(parts, frame.position, frame.bytes)
    if (parts.state.phase !== 'live') return
  }
}

// A frame for the client: straight to a pull that waits, else queued; live events queued past the
// bound overflow.
function take(parts: StreamParts, position: bigint | undefined, bytes: Uint8Array) {
  const { options, queue } = parts
  parts.state = taken(parts.state, position)
  parts.lastSentAt = options.now()
  if (parts.waitingPull && parts.controller) {
    parts.controller.enqueue(bytes)
    if (position !== undefined) queue.handedOutTo(position)
    parts.waitingPull()
    parts.waitingPull = undefined
    return
  }
  queue.push({ position, bytes })
  if (parts.state.phase !== 'live' || queue.bytes() <= options.maxBufferedBytes) return
  const next = overflowed(parts.state, queue.handedOut(), options.now(), options.stallMs)
  if (next === 'stalled') return reset(parts)
  queue.drain()
  parts.state = next
}

function end(parts: StreamParts, reason: string) {
  const rest = [...parts.queue.drain(), encoder.encode(commentFrame(reason))]
  finish(parts, (controller) => {
    for (const bytes of rest) controller.enqueue(bytes)
    controller.close()
  })
}

// An error with no reason resets the connection without the runtime logging it. It is raised on
// a later turn: Bun leaves the connection open when a body errors in the same turn as a chunk was
// enqueued (found with group commit, whose batches arrive in one turn).
function reset(parts: StreamParts) {
  finish(parts, (controller) => setTimeout(() => controller.error(undefined), 0))
}

function finish(
  parts: StreamParts,
  close: (controller: ReadableStreamDefaultController<Uint8Array>) => void,
) {
  if (parts.state.phase === 'closed') return
  parts.state = closedStream(parts.state)
  parts.held.release()
  parts.queue.drain()
  try {
    if (parts.controller) close(parts.controller)
  } catch {
    // The client went away first: the body is already closed.
  }
  parts.waitingPull?.()
  parts.waitingPull = undefined
  parts.closed()
}
