// HTTP/1.1 over a bare TCP socket, for what fetch cannot send or cannot show: any Host header or
// none, a body that stops half-way, bytes no client would write.

export type RawAnswer = {
  // Everything received, as text; '' when the server said nothing.
  text: string
  // 0 when nothing that reads as a status line arrived.
  status: number
  headers: Headers
  body: string
  // Whether the server closed the connection before the wait ended.
  closed: boolean
  // From the write to the first byte of the answer (undefined: none), and to the end of the wait.
  firstByteMs: number | undefined
  elapsedMs: number
}

// Writes the bytes, then waits until a whole answer with a Content-Length has arrived, the server
// closes the connection, or `waitMs` pass, and returns what it answered.
export async function rawExchange(
  url: string,
  bytes: Uint8Array | string,
  { waitMs = 10_000 }: { waitMs?: number } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url)
  const chunks: Uint8Array<ArrayBuffer>[] = []
  const { promise: ended, resolve } = Promise.withResolvers<void>()
  const { promise: gone, resolve: onGone } = Promise.withResolvers<void>()
  let closed = false
  let firstByteMs: number | undefined
  const startedAt = performance.now()
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data: (_socket, chunk) => {
        firstByteMs ??= performance.now() - startedAt
        chunks.push(new Uint8Array(chunk))
        if (isWholeAnswer(chunks)) resolve()
      },
      close: () => {
        closed = true
        resolve()
        onGone()
      },
      error: () => {
        closed = true
        resolve()
        onGone()
      },
    },
  })
  socket.write(bytes)
  await Promise.race([ended, Bun.sleep(waitMs)])
  const elapsedMs = performance.now() - startedAt
  // A closed connection shows itself within a moment of the answer that announced it.
  if (!closed) await Promise.race([gone, Bun.sleep(50)])
  // (our own end below closes it too)
  const closedByServer = closed
  socket.end()
  const text = new TextDecoder().decode(await new Blob(chunks).arrayBuffer())
  return { ...parseAnswer(text), text, closed: closedByServer, firstByteMs, elapsedMs }
}

function isWholeAnswer(chunks: Uint8Array<ArrayBuffer>[]): boolean {
  const bytes = Buffer.concat(chunks)
  const split = bytes.indexOf('\r\n\r\n')
  if (split === -1) return false
  const length = /\r\ncontent-length: *(\d+)/i.exec(bytes.subarray(0, split).toString('latin1'))?.[1]
  return length !== undefined && bytes.byteLength - split - 4 >= Number(length)
}

function parseAnswer(text: string): { status: number; headers: Headers; body: string } {
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0)
  const split = text.indexOf('\r\n\r\n')
  const head = split === -1 ? text : text.slice(0, split)
  const headers = new Headers()
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':')
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  const rawBody = split === -1 ? '' : text.slice(split + 4)
  const body = headers.get('transfer-encoding') === 'chunked' ? dechunk(rawBody) : rawBody
  return { status, headers, body }
}

function dechunk(text: string): string {
  let rest = text
  let out = ''
  for (;;) {
    const lineEnd = rest.indexOf('\r\n')
    if (lineEnd === -1) return out
    const size = Number.parseInt(rest.slice(0, lineEnd), 16)
    if (!(size > 0)) return out
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size)
    rest = rest.slice(lineEnd + 2 + size + 2)
  }
}

// A request as a client writes it; `host: null` leaves the Host header out.
export function rawRequest(
  method: string,
  path: string,
  { host, headers = {}, body = '' }: { host: string | null; headers?: Record<string, string>; body?: string },
): string {
  const lines = [`${method} ${path} HTTP/1.1`]
  if (host !== null) lines.push(`Host: ${host}`)
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  lines.push('Connection: close')
  if (body !== '') lines.push(`Content-Length: ${new TextEncoder().encode(body).byteLength}`)
  return `${lines.join('\r\n')}\r\n\r\n${body}`
}
