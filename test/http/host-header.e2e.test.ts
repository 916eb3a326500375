import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { tokenHeader } from '../support/plant-client.ts'
import { rawExchange, rawRequest } from '../support/raw-http.ts'
import { type Service, startService } from '../support/service.ts'

// The Host values a client, a proxy or a cluster sends (docs/api.md: routing ignores the Host).
const HOSTS = [
  'localhost',
  'api',
  'x',
  'a.b',
  'web:80',
  'web:3000',
  '10.0.0.7',
  '10.0.0.7:3000',
  '[::1]:3000',
  '[::1]',
  'API',
  'plant-store.default.svc.cluster.local:8080',
]

// Elysia compiles its router ahead of time unless ELYSIA_AOT=false picks its dynamic one, which
// finds the path on its own: both must route by the path alone.
describe.each([
  ['the default router', {}],
  ['ELYSIA_AOT=false', { ELYSIA_AOT: 'false' }],
])('with %s', (_name, extraEnv) => {
  let service: Service
  let token: string
  beforeAll(async () => {
    service = await startService({ label: 'edge', env: extraEnv })
    token = await service.tokenFor('h', 600)
  }, 30_000)
  afterAll(async () => {
    await service?.stop()
  })

  const ask = (method: string, path: string, host: string | null, headers: Record<string, string> = {}) =>
    rawExchange(service.url, rawRequest(method, path, { host, headers }))

  test.each(HOSTS)('Host: %s reaches every route as localhost does', async (host) => {
    const health = await ask('GET', '/health', host)
    expect(health.status).toBe(200)
    expect(JSON.parse(health.body)).toEqual({ status: 'ok' })

    const anonymous = await ask('GET', '/plants', host)
    expect(anonymous.status).toBe(401)
    expect(JSON.parse(anonymous.body)).toMatchObject({ error: 401 })

    const listed = await ask('GET', '/plants?limit=5', host, tokenHeader(token))
    expect(listed.status).toBe(200)
    expect(JSON.parse(listed.body)).toEqual([])

    const unknown = await ask('GET', '/no/such/path?x=1', host)
    expect(unknown.status).toBe(404)
    expect(JSON.parse(unknown.body)).toEqual({ error: 404, message: 'no such path: /no/such/path' })

    const wrongMethod = await ask('DELETE', '/plants', host)
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get('allow')).toContain('GET')
    expect(JSON.parse(wrongMethod.body)).toMatchObject({ error: 405 })
  })

  // RFC 9110 §9.3.2: HEAD answers as GET without the body, and Allow lists it wherever GET is.
  test('HEAD works wherever GET does, and a 405 lists it in Allow', async () => {
    const head = await ask('HEAD', '/plants', 'api', tokenHeader(token))
    expect(head.status).toBe(200)
    expect(head.body).toBe('')
    expect((await ask('HEAD', '/health', 'api')).status).toBe(200)
    expect((await ask('HEAD', '/plants', 'api')).status).toBe(401)
    const plants = await ask('DELETE', '/plants', 'api')
    expect(plants.headers.get('allow')).toBe('GET, HEAD, POST')
    const health = await ask('PUT', '/health', 'api')
    expect(health.status).toBe(405)
    expect(health.headers.get('allow')).toBe('GET, HEAD')
  })

  // One rule for both position headers: an empty value is not a decimal integer, so it is a 400
  // (docs/live-changes.md; docs/operating.md, Scaling out), as any other malformed one. (curl -H 'Name:' removes the header instead.)
  test('an empty Plant-Store-Position or Last-Event-ID header is a 400 with the Error body', async () => {
    const bearer = tokenHeader(token)
    const listed = await ask('GET', '/plants', 'api', { ...bearer, 'plant-store-position': '' })
    expect(listed.status).toBe(400)
    expect(JSON.parse(listed.body)).toMatchObject({ error: 400 })
    const followed = await ask('GET', '/plants/changes', 'api', { ...bearer, 'last-event-id': '' })
    expect(followed.status).toBe(400)
    expect(JSON.parse(followed.body)).toMatchObject({ error: 400 })
  })

  // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host. Bun does, before
  // the app sees it (so the body is Bun's, not the Error body).
  test('an HTTP/1.1 request without Host is refused by the runtime with 400', async () => {
    const answer = await ask('GET', '/health', null)
    expect(answer.status).toBe(400)
  })
})
