import { parseJsonExact } from './exact-json.ts'
import { HttpError } from './http-error.ts'

export const MAX_BODY_BYTES = 65_536

// The body, or the HttpError that rejects it. Returned rather than thrown so the caller can
// authenticate first: an anonymous caller learns nothing about the body rules.
export async function readJsonBody(request: Request): Promise<unknown> {
  const contentType = request.headers.get('content-type')
  if (!isJsonContentType(contentType)) {
    return new HttpError(415, 'Content-Type must be application/json')
  }
  const declaredLength = request.headers.get('content-length')
  if (Number(declaredLength ?? 0) > MAX_BODY_BYTES) return tooLarge()
  // With a declared length the server delivers exactly that many bytes: read them at once. A
  // chunked body has none, and is read chunk by chunk up to the limit.
  const bytes =
    declaredLength === null
      ? await readAtMost(request, MAX_BODY_BYTES)
      : new Uint8Array(await request.arrayBuffer())
  if (!bytes) return tooLarge()
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    return new HttpError(400, 'the body is not valid UTF-8')
  }
  try {
    return parseJsonExact(text)
  } catch (error) {
    const detail = error instanceof SyntaxError ? `: ${error.message}` : ''
    return new HttpError(400, `the body is not valid JSON${detail}`)
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

async function readAtMost(request: Request, limit: number): Promise<Uint8Array | undefined> {
  if (!request.body) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

function tooLarge(): HttpError {
  return new HttpError(413, `the body is larger than ${MAX_BODY_BYTES} bytes`)
}
