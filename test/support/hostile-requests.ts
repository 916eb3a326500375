import fc from 'fast-check'
import { encodeCursor } from '../../src/plants/cursor.ts'

// One generated request, independent of how it is sent (app.handle or a real socket).
export type HostileRequest = {
  method: string
  path: string
  headers: Record<string, string>
  body?: string | Uint8Array
}

// Characters a header value can carry on the wire (visible ASCII, space, Latin-1).
const headerText = (maxLength: number) =>
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((code) => code !== 0x7f)
      .map((code) => String.fromCharCode(code)),
    maxLength,
  })

const idLiteral = fc.oneof(
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
  fc.integer({ min: -5, max: 40 }).map(String),
  fc.double().map((value) => (Number.isFinite(value) ? String(value) : '1e400')),
  fc.constantFrom('7.0', '7e0', '-0', '1.5', '1e400', '9223372036854775808', '-9223372036854775809', '0x10'),
  fc.constantFrom('"7"', 'null', 'true', '[]', '{}', '"9223372036854775807"', 'NaN', '--1', '1e99999999'),
)

const textLiteral = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 30 }).map((text) => JSON.stringify(text)),
  fc.string({ unit: 'binary', maxLength: 30 }).map((text) => JSON.stringify(text)),
  fc.constantFrom('""', '"\\ud800"', '"a\\udfff"', '"\\u0000"', 'null', '7', '[]', '{"x":1}'),
  fc.constantFrom(
    JSON.stringify('x'.repeat(1024)),
    JSON.stringify('x'.repeat(1025)),
    JSON.stringify('🌱'.repeat(1025)),
  ),
)

// A valid body with its fields replaced, dropped, duplicated or joined by strangers.
const mutatedValidBody = fc
  .record(
    {
      id: idLiteral,
      name: textLiteral,
      tag: textLiteral,
      extra: fc.tuple(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
      duplicateId: idLiteral,
    },
    { requiredKeys: [] },
  )
  .map(({ id, name, tag, extra, duplicateId }) => {
    const members = [
      id === undefined ? undefined : `"id": ${id}`,
      name === undefined ? undefined : `"name": ${name}`,
      tag === undefined ? undefined : `"tag": ${tag}`,
      extra === undefined ? undefined : `${JSON.stringify(extra[0])}: ${JSON.stringify(extra[1])}`,
      duplicateId === undefined ? undefined : `"id": ${duplicateId}`,
    ].filter((member) => member !== undefined)
    return `{${members.join(', ')}}`
  })

const body = fc.oneof(
  { weight: 4, arbitrary: mutatedValidBody },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? '') },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      '{',
      '{"id": 1, "name": "x"',
      '\uFEFF{"id": 1, "name": "x"}',
      '{"id": 1, "name": "x"}garbage',
      `{"id": 1, "name": "${'x'.repeat(70_000)}"}`,
      `${'['.repeat(5000)}${']'.repeat(5000)}`,
    ),
  },
  { weight: 1, arbitrary: fc.constant(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])) },
)

const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'Application/JSON; Charset="UTF-8"',
    'application/json; charset=latin1',
    'application/json;;;',
    'text/plain',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded',
    'application/merge-patch+json',
    '',
  ),
  headerText(40),
)

const queryValue = fc.oneof(
  fc.integer({ min: -3, max: 5 }).map(String),
  fc.constantFrom('', '00', '1.5', '1e3', '2147483647', '2147483648', '-0', ' 1', '0x1', '%', '%zz', '%00'),
  fc.bigInt({ min: 0n, max: 2n ** 64n }).map(encodeCursor),
  fc.base64String({ maxLength: 40 }).map((text) => text.replace(/=+$/, '')),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 80 }).map((text) => encodeURIComponent(text.slice(0, 80))),
)

const query = fc
  .array(fc.tuple(fc.constantFrom('limit', 'after', 'LIMIT', 'cursor', 'limit[]', ''), queryValue), {
    maxLength: 4,
  })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([key, value]) => `${key}=${value}`).join('&')}`))

const path = fc.oneof(
  { weight: 8, arbitrary: fc.constant('/plants') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '/plants/',
      '/plants/1',
      '/PLANTS',
      '//plants',
      '/plants%00',
      '/',
      '/health',
      '/..%2fplants',
    ),
  },
  { weight: 1, arbitrary: fc.webPath() },
)

export type TokenKit = { valid: string[]; tamper: (token: string, index: number) => string }

export function authorization({ valid, tamper }: TokenKit) {
  const token = fc.constantFrom(...valid)
  return fc.oneof(
    { weight: 5, arbitrary: token.map((jwt) => `Bearer ${jwt}`) },
    { weight: 2, arbitrary: fc.tuple(token, fc.nat()).map(([jwt, index]) => `Bearer ${tamper(jwt, index)}`) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        headerText(60).map((text) => `Bearer ${text}`),
        headerText(60),
        fc.constantFrom(
          'Bearer',
          'Bearer ',
          'Basic YWxpY2U6cHc=',
          'bearer    a.b.c',
          'Bearer a.b',
          'Bearer ....',
        ),
        fc
          .tuple(fc.base64String(), fc.base64String(), fc.base64String())
          .map((parts) => `Bearer ${parts.map((part) => part.replace(/=+$/, '')).join('.')}`),
      ),
    },
  )
}

export function hostileRequest(tokens: TokenKit): fc.Arbitrary<HostileRequest> {
  return fc
    .record({
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('POST', 'GET') },
        { weight: 1, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD') },
      ),
      path,
      query,
      authorization: authorization(tokens),
      contentType: fc.option(contentType, { nil: undefined }),
      requestId: fc.option(headerText(200), { nil: undefined }),
      accept: fc.option(headerText(30), { nil: undefined }),
      body,
    })
    .map(({ method, path, query, authorization, contentType, requestId, accept, body }) => {
      const headers: Record<string, string> = {}
      if (authorization !== undefined) headers.authorization = authorization
      if (contentType !== undefined) headers['content-type'] = contentType
      if (requestId !== undefined) headers['x-request-id'] = requestId
      if (accept !== undefined) headers.accept = accept
      const hasBody = method !== 'GET' && method !== 'HEAD'
      return { method, path: `${path}${query}`, headers, body: hasBody ? body : undefined }
    })
}

// Flips one character of a token to another base64url character.
export function tamperToken(token: string, index: number): string {
  const at = index % token.length
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const current = token[at] ?? 'A'
  const replacement = alphabet[(alphabet.indexOf(current) + 1 + (index % 63)) % alphabet.length] ?? 'A'
  return token.slice(0, at) + replacement + token.slice(at + 1)
}
