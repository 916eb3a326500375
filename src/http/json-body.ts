import { Failure } from '../shared/errors.ts'

export const MAX_BODY_BYTES = 65_536
// The longest a body may take to arrive, whole. A client that stops half-way is told so (408) and
// its connection closed, well inside the 30 s within which a stalled body must be answered, before
// the request deadline's 503.
export const BODY_TIMEOUT_MS = 10_000

// The body, or the Failure that rejects it. Returned rather than thrown so the caller can
// authenticate first: an anonymous caller learns nothing about the body rules.
export async function readJsonBody(request: Request, timeoutMs = BODY_TIMEOUT_MS): Promise<unknown> {
  const contentType = request.headers.get('content-type')
  if (!isJsonContentType(contentType)) {
    return new Failure('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json')
  }
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) return tooLarge()
  const bytes = await readAtMost(request, MAX_BODY_BYTES, timeoutMs)
  if (bytes === 'too large') return tooLarge()
  if (bytes === 'stalled') {
    return new Failure(
      'REQUEST_TIMEOUT',
      `the body stopped arriving: it was not complete within ${timeoutMs} ms`,
      {
        connection: 'close',
      },
    )
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    return new Failure('BAD_REQUEST', 'the body is not valid UTF-8')
  }
  try {
    return parseJsonExact(text)
  } catch (error) {
    const detail = error instanceof SyntaxError ? `: ${error.message}` : ''
    return new Failure('BAD_REQUEST', `the body is not valid JSON${detail}`)
  }
}

function isJsonContentType(header: string | null): boolean {
  if (!header) return false
  const [type = '', ...parameters] = header.split(';').map((part) => part.trim().toLowerCase())
  if (type !== 'application/json') return false
  return parameters.every((parameter) => {
    const [name, value] = parameter.split('=').map((part) => part.trim().replace(/^"|"$/g, ''))
    return name === 'charset' ? value === 'utf-8' || value === 'utf8' : true
  })
}

// A body that declares its length (already checked against the limit, and enforced by the HTTP
// parser) is read whole, natively; a chunked one chunk by chunk up to the limit. Either within
// `timeoutMs`.
async function readAtMost(
  request: Request,
  limit: number,
  timeoutMs: number,
): Promise<Uint8Array | 'too large' | 'stalled'> {
  if (!request.body) return new Uint8Array()
  if (request.headers.has('content-length')) return readDeclared(request, timeoutMs)
  const chunks: Uint8Array<ArrayBuffer>[] = []
  let size = 0
  const reader = request.body.getReader()
  let timer: ReturnType<typeof setTimeout> | undefined
  const stalled = new Promise<'stalled'>((resolve) => {
    timer = setTimeout(resolve, timeoutMs, 'stalled')
  })
  try {
    for (;;) {
      const read = await Promise.race([reader.read(), stalled])
      if (read === 'stalled') return cancelled(reader, read)
      if (read.done) return new Uint8Array(await new Blob(chunks).arrayBuffer())
      size += read.value.byteLength
      if (size > limit) return cancelled(reader, 'too large')
      chunks.push(read.value)
    }
  } finally {
    clearTimeout(timer)
  }
}

async function readDeclared(request: Request, timeoutMs: number): Promise<Uint8Array | 'stalled'> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const stalled = new Promise<'stalled'>((resolve) => {
    timer = setTimeout(resolve, timeoutMs, 'stalled')
  })
  try {
    const read = await Promise.race([request.arrayBuffer(), stalled])
    return read === 'stalled' ? read : new Uint8Array(read)
  } finally {
    clearTimeout(timer)
  }
}

// The rest of the body is not wanted; the answer does not wait for the cancel to settle. Typed by
// what it uses: which reader type `getReader()` returns depends on the caller's lib and types.
function cancelled<Outcome>(reader: { cancel: () => Promise<void> }, outcome: Outcome): Outcome {
  void reader.cancel().catch(() => {})
  return outcome
}

// The rest of the body is never read, so the connection goes with the answer rather than carry
// on past bytes the client may still be sending (at any size: the runtime sets no lower limit).
function tooLarge(): Failure {
  return new Failure('PAYLOAD_TOO_LARGE', `the body is larger than ${MAX_BODY_BYTES} bytes`, {
    connection: 'close',
  })
}

// JSON.parse rounds integers beyond 2^53. The reviver's `context.source` (Bun, Deno, Node 21+)
// gives the literal as written, so `id` values keep their exact value as bigint.
export function parseJsonExact(text: string): unknown {
  return JSON.parse(text, (key, value, context?: { source?: string }) => {
    if (key !== 'id' || typeof value !== 'number' || context?.source === undefined) return value
    return exactInteger(context.source) ?? value
  })
}

const NUMBER_LITERAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
// Beyond this many digits a value is far outside int64; stop before building huge bigints.
const MAX_DIGITS = 40

// The exact integer a JSON number literal denotes (`7.0` and `7e0` are 7), or undefined when it
// has a fractional part or is too large to be worth computing.
export function exactInteger(literal: string): bigint | undefined {
  const match = NUMBER_LITERAL.exec(literal)
  if (!match) return undefined
  const [, sign = '', whole = '', fraction = '', exponentText = '0'] = match
  const digits = (whole + fraction).replace(/^0+(?=\d)/, '')
  const scale = Number(exponentText) - fraction.length
  if (digits === '0') return 0n
  if (scale >= 0) {
    if (digits.length + scale > MAX_DIGITS) return undefined
    return BigInt(sign + digits) * 10n ** BigInt(scale)
  }
  const cut = digits.length + scale
  const dropped = cut > 0 ? digits.slice(cut) : digits
  if (!/^0*$/.test(dropped)) return undefined
  return cut > 0 ? BigInt(sign + digits.slice(0, cut)) : 0n
}
