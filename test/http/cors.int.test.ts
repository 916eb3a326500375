import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { silentLogger } from '../../src/shared/logger.ts'
import type { App } from '../../src/start/app.ts'
import { serve } from '../../src/start/serve.ts'
import { createHarness, type Harness } from '../support/harness.ts'

// CORS_ORIGINS as the app applies it, on PostgreSQL through app.handle: the preflight's exact
// answer, and the headers every other answer carries, errors and the change stream included.
const APP = 'https://app.example'
const OTHER = 'https://evil.example'
const ALLOWED_HEADERS =
  'Authorization, Content-Type, If-None-Match, Last-Event-ID, Plant-Store-Position, X-Request-Id'
const EXPOSED_HEADERS = 'ETag, Link, Plant-Store-Position, Retry-After, X-Request-Id'
// What an answer to the listed origin carries.
const FOR_APP = {
  'access-control-allow-origin': APP,
  'access-control-expose-headers': EXPOSED_HEADERS,
  vary: 'Origin',
}

const corsHeadersOf = (response: Response) =>
  Object.fromEntries(
    [...response.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'),
  )

const preflight = (h: Harness, path: string, origin: string, method = 'POST') =>
  h.request('OPTIONS', path, {
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type',
    },
  })

describe('with a list of origins', () => {
  let h: Harness
  let token: string
  beforeAll(async () => {
    h = await createHarness('postgres', { changes: {}, cors: { origins: [APP, 'http://127.0.0.1:5173'] } })
    token = await h.tokenFor('cors-owner')
  }, 30_000)
  afterAll(() => h?.close())

  test('a preflight of a listed origin is 204 with the path methods, the API request headers and a max age', async () => {
    for (const [path, methods] of [
      ['/plants', 'GET, HEAD, POST'],
      ['/plants/changes', 'GET, HEAD'],
    ] as const) {
      const response = await preflight(h, path, APP)
      expect({ path, status: response.status, body: await response.text() }).toEqual({
        path,
        status: 204,
        body: '',
      })
      expect(corsHeadersOf(response)).toEqual({
        'access-control-allow-origin': APP,
        'access-control-allow-methods': methods,
        'access-control-allow-headers': ALLOWED_HEADERS,
        'access-control-max-age': '600',
        vary: 'Origin',
      })
      expect(response.headers.get('x-request-id')).toBeTruthy()
    }
  })

  test('a preflight is routed by its path alone, whatever the Host (api, x, an address)', async () => {
    for (const host of ['api', 'x', '10.0.0.7:3000', 'API']) {
      const response = await h.app.handle(
        new Request(`http://${host}/plants/changes`, {
          method: 'OPTIONS',
          headers: { origin: APP, 'access-control-request-method': 'GET' },
        }),
      )
      expect({ host, status: response.status }).toEqual({ host, status: 204 })
      expect(response.headers.get('access-control-allow-methods')).toBe('GET, HEAD')
    }
  })

  test('a preflight of an unlisted origin gets no CORS header: the 405 any OPTIONS gets', async () => {
    const response = await preflight(h, '/plants', OTHER)
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET, HEAD, POST')
    expect(corsHeadersOf(response)).toEqual({ vary: 'Origin' })
    expect(await response.json()).toMatchObject({ error: 405 })
  })

  test('a preflight of an unknown path stays 404, and an OPTIONS that is no preflight stays 405', async () => {
    const unknown = await preflight(h, '/no/such/path', APP)
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toEqual({ error: 404, message: 'no such path: /no/such/path' })
    const plain = await h.request('OPTIONS', '/plants', { headers: { origin: APP } })
    expect(plain.status).toBe(405)
    expect(plain.headers.get('access-control-allow-methods')).toBeNull()
  })

  test('every answer to a listed origin exposes the headers a client reads, errors included', async () => {
    const origin = { origin: APP }
    const answers: Record<string, Response> = {
      created: await h.request('POST', '/plants', { token, body: { id: 1, name: 'Fern' }, headers: origin }),
      conflict: await h.request('POST', '/plants', { token, body: { id: 1, name: 'Palm' }, headers: origin }),
      badBody: await h.request('POST', '/plants', {
        token,
        body: { id: 'x', name: 'Palm' },
        headers: origin,
      }),
      unauthorized: await h.request('GET', '/plants', { headers: origin }),
      listed: await h.request('GET', '/plants', { token, headers: origin }),
      unknownPath: await h.request('GET', '/nothing', { headers: origin }),
      wrongMethod: await h.request('DELETE', '/plants', { token, headers: origin }),
      health: await h.request('GET', '/health', { headers: origin }),
    }
    const etag = answers.listed?.headers.get('etag') ?? ''
    answers.revalidated = await h.request('GET', '/plants', {
      token,
      headers: { ...origin, 'if-none-match': etag },
    })
    const statuses = Object.fromEntries(
      Object.entries(answers).map(([name, response]) => [name, response.status]),
    )
    expect(statuses).toEqual({
      created: 200,
      conflict: 409,
      badBody: 400,
      unauthorized: 401,
      listed: 200,
      unknownPath: 404,
      wrongMethod: 405,
      health: 200,
      revalidated: 304,
    })
    for (const [name, response] of Object.entries(answers))
      expect({ name, headers: corsHeadersOf(response) }).toEqual({
        name,
        headers: FOR_APP,
      })
  })

  test('the change stream carries them too', async () => {
    const response = await h.request('GET', '/plants/changes', { token, headers: { origin: APP } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    expect(corsHeadersOf(response)).toEqual(FOR_APP)
    await response.body?.cancel()
  })

  test('an unlisted origin, or none, gets the answer without CORS headers, and Vary says it depends on Origin', async () => {
    for (const headers of [{ origin: OTHER }, { origin: 'null' }, {}] as Record<string, string>[]) {
      const response = await h.request('GET', '/plants', { token, headers })
      expect(response.status).toBe(200)
      expect(corsHeadersOf(response)).toEqual({ vary: 'Origin' })
    }
  })
})

test("the 503 the request deadline gives in the app's stead carries them too, so a page can read Retry-After", async () => {
  // given a server whose app never answers (a database gone silent)
  const silentApp = { fetch: () => new Promise<Response>(() => {}) } as unknown as App
  const server = serve(silentApp, {
    hostname: '127.0.0.1',
    port: 0,
    requestTimeoutMs: 300,
    logger: silentLogger(),
    cors: { origins: [APP] },
  })
  try {
    // when a listed origin's request waits past the deadline
    const response = await fetch(`http://127.0.0.1:${server.port}/plants`, {
      headers: { origin: APP },
      signal: AbortSignal.timeout(10_000),
    })
    // then
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(corsHeadersOf(response)).toEqual(FOR_APP)
  } finally {
    await Promise.race([server.stop(), Bun.sleep(1_000)])
  }
})

describe('with *', () => {
  let h: Harness
  beforeAll(async () => {
    h = await createHarness('postgres', { cors: { origins: '*' } })
  }, 30_000)
  afterAll(() => h?.close())

  test('any origin is answered *, with nothing that varies', async () => {
    const pre = await preflight(h, '/plants', OTHER)
    expect(pre.status).toBe(204)
    expect(corsHeadersOf(pre)).toEqual({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, HEAD, POST',
      'access-control-allow-headers': ALLOWED_HEADERS,
      'access-control-max-age': '600',
    })
    for (const headers of [{ origin: OTHER }, {}] as Record<string, string>[]) {
      const response = await h.request('GET', '/plants', { headers })
      expect(response.status).toBe(401)
      expect(corsHeadersOf(response)).toEqual({
        'access-control-allow-origin': '*',
        'access-control-expose-headers': EXPOSED_HEADERS,
      })
    }
  })
})

describe('without CORS_ORIGINS', () => {
  let h: Harness
  beforeAll(async () => {
    h = await createHarness('postgres')
  }, 30_000)
  afterAll(() => h?.close())

  test('a preflight is the 405 any OPTIONS gets, and no answer has a CORS header or Vary', async () => {
    const pre = await preflight(h, '/plants', APP)
    expect(pre.status).toBe(405)
    expect(corsHeadersOf(pre)).toEqual({})
    expect(corsHeadersOf(await h.request('GET', '/health', { headers: { origin: APP } }))).toEqual({})
  })
})
