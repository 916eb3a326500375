import { connect } from 'node:net'
import type { SseEvent } from './sse-client.ts'

export type SlowReadResult = { events: SseEvent[]; cutOff: boolean }

// A client on a raw socket that reads at most `bytesPerSecond`, in whatever small pieces the socket
// hands over, pausing between them: TCP's flow control holds the server back, as a slow network
// would. It reads until `count` events arrived, the server ended the response, or `timeoutMs`.
// `cutOff` tells that the connection ended (reset or closed) before the `count`th event.
export function readSlowly(
  url: string,
  token: string,
  {
    lastEventId,
    count,
    bytesPerSecond,
    timeoutMs = 120_000,
  }: {
    lastEventId?: string
    count: number
    bytesPerSecond: number
    timeoutMs?: number
  },
): Promise<SlowReadResult> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  const events: SseEvent[] = []
  const body = chunkedBody()
  const decoder = new TextDecoder()
  let head = Buffer.alloc(0)
  let inBody = false
  let text = ''
  return new Promise<SlowReadResult>((resolve, reject) => {
    const done = (cutOff: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve({ events, cutOff })
    }
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`the slow reader had ${events.length} of ${count} events after ${timeoutMs} ms`))
    }, timeoutMs)
    socket.on('error', () => done(true))
    socket.on('close', () => done(events.length < count))
    socket.on('data', (chunk: Buffer) => {
      socket.pause()
      setTimeout(() => socket.resume(), (chunk.length / bytesPerSecond) * 1000)
      let data = chunk
      if (!inBody) {
        head = Buffer.concat([head, chunk])
        const end = head.indexOf('\r\n\r\n')
        if (end < 0) return
        const status = head.subarray(0, head.indexOf('\r\n')).toString('latin1')
        if (!status.startsWith('HTTP/1.1 200')) return reject(new Error(`the stream answered ${status}`))
        inBody = true
        data = head.subarray(end + 4)
      }
      text += decoder.decode(body(data), { stream: true })
      for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
        const lines = text.slice(0, end).split('\n')
        text = text.slice(end + 2)
        const field = (name: string) =>
          lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2)
        const data = field('data')
        if (data !== undefined) events.push({ id: field('id'), event: field('event'), data })
      }
      if (events.length >= count) done(false)
    })
    const headers = [`Authorization: Bearer ${token}`]
    if (lastEventId !== undefined) headers.push(`Last-Event-ID: ${lastEventId}`)
    socket.write(`GET /plants/changes?after=0 HTTP/1.1\r\nHost: test\r\n${headers.join('\r\n')}\r\n\r\n`)
  })
}

// Decodes HTTP/1.1 chunked transfer coding piece by piece: each call takes the next bytes off the
// wire and returns the body bytes among them.
function chunkedBody(): (bytes: Buffer) => Buffer {
  let pending = Buffer.alloc(0)
  let remaining = 0
  return (bytes) => {
    pending = Buffer.concat([pending, bytes])
    const out: Buffer[] = []
    for (;;) {
      if (remaining > 0) {
        const taken = pending.subarray(0, remaining)
        out.push(taken)
        remaining -= taken.length
        pending = pending.subarray(taken.length)
        if (remaining > 0) break
        // the CRLF after the chunk's data
        remaining = -2
      }
      if (remaining < 0) {
        if (pending.length < 2) break
        pending = pending.subarray(2)
        remaining = 0
      }
      const lineEnd = pending.indexOf('\r\n')
      if (lineEnd < 0) break
      remaining = Number.parseInt(pending.subarray(0, lineEnd).toString('latin1'), 16)
      pending = pending.subarray(lineEnd + 2)
      if (remaining === 0) break
    }
    return Buffer.concat(out)
  }
}
