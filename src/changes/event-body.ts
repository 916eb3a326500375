import { commentFrame } from './change-frame.ts'

export type EventBodyOptions = {
  // Beyond this much waiting, the connection is reset. What the runtime has already taken sits
  // in the kernel's socket buffers.
  maxBufferedBytes: number
  now: () => number
  // The client took everything written so far and wants more.
  onDrained: () => void | Promise<void>
  onClosed: () => void
}

export type EventBody = ReturnType<typeof createEventBody>

const encoder = new TextEncoder()

// A response body of server-sent events. Nothing is pushed at the client: the runtime pulls the
// body as the connection drains, so a client that stops reading stops the pulls, its text piles up
// here, and past the bound its connection is reset. Text kept here goes out as one chunk a pull.
// It opens with a comment, so that the client knows it is connected.
export function createEventBody({ maxBufferedBytes, now, onDrained, onClosed }: EventBodyOptions) {
  // Set by `start`, which the constructor calls.
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let queue: string[] = []
  let queuedBytes = 0
  // A pull that found nothing to send waits for the next write.
  let pulling: (() => void) | undefined
  let closed = false
  let lastSentAt = now()
  const flush = (text = '') => {
    controller.enqueue(encoder.encode(queue.join('') + text))
    queue = []
    queuedBytes = 0
    pulling?.()
    pulling = undefined
  }
  const finish = (close: () => void) => {
    if (closed) return
    closed = true
    try {
      close()
    } catch {
      // The client went away first: the body is already closed.
    }
    queue = []
    pulling?.()
    onClosed()
  }
  const body = new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c
        c.enqueue(encoder.encode(commentFrame('connected')))
      },
      pull: async () => {
        if (queue.length === 0) await onDrained()
        if (queue.length > 0) flush()
        else if (!closed) await new Promise<void>((resolve) => (pulling = resolve))
      },
      cancel: () => finish(() => {}),
    },
    { highWaterMark: 0 },
  )

  const write = (text: string) => {
    if (closed) return
    lastSentAt = now()
    queue.push(text)
    queuedBytes += text.length
    if (pulling) flush()
    // An error with no reason resets the connection without the runtime logging it. It is raised
    // on a later turn: Bun leaves the connection open when a body errors in the same turn as a
    // chunk was enqueued (found with group commit, whose batches arrive in one turn).
    else if (queuedBytes > maxBufferedBytes) finish(() => setTimeout(() => controller.error(undefined), 0))
  }

  return {
    body,
    isClosed: () => closed,
    lastSentAt: () => lastSentAt,
    write,
    comment: (text: string) => write(commentFrame(text)),
    // A clean end: what is queued still goes out, then the body ends and the client reconnects.
    end: (reason: string) =>
      finish(() => {
        flush(commentFrame(reason))
        controller.close()
      }),
  }
}
