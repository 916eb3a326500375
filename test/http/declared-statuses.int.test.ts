import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { openPostgres } from '../../src/database/database.ts'
import { createHarness, type Harness, testApp } from '../support/harness.ts'
import { type HostileRequest, hostileRequest, tamperToken } from '../support/hostile-requests.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// Every status a route answers is one its schema declares (and so one the OpenAPI document, built
// from those schemas, names). An unknown path or method is not a route: it answers 404 or 405.
const HOSTILE_RUNS = 2000

type Route = { method: string; path: string; hooks: { response?: Record<string, unknown> } }
type Answer = { method: string; path: string; status: number }

let h: Harness
let alice: string
beforeAll(async () => {
  h = await createHarness('postgres')
  alice = await h.tokenFor('alice')
})
afterAll(() => h.close())

// The route Elysia serves a request with: HEAD is served by GET, and a trailing slash is ignored.
function routeFor(routes: readonly Route[], method: string, path: string): Route | undefined {
  const pattern = (routePath: string) => new RegExp(`^${routePath.replace(/:[^/]+/g, '[^/]+')}/?$`)
  const served = method === 'HEAD' ? 'GET' : method
  return routes.find((route) => route.method === served && pattern(route.path).test(path))
}

// The answers a route gave without declaring them, as "METHOD /route STATUS".
function undeclared(routes: readonly Route[], answers: Answer[]): string[] {
  return answers.flatMap(({ method, path, status }) => {
    const route = routeFor(routes, method, path)
    if (!route) return [404, 405].includes(status) ? [] : [`${method} ${path} ${status} (no route)`]
    return String(status) in (route.hooks.response ?? {}) ? [] : [`${method} ${route.path} ${status}`]
  })
}

async function answer(app: { handle: (request: Request) => Promise<Response> }, request: HostileRequest) {
  const { method, path, headers, body } = request
  const response = await app.handle(
    new Request(`http://localhost${path}`, { method, headers, body: body as BodyInit | undefined }),
  )
  await response.arrayBuffer()
  return { method, path: new URL(`http://localhost${path}`).pathname, status: response.status }
}

const post = (body: string, headers: Record<string, string> = {}): HostileRequest => ({
  method: 'POST',
  path: '/plants',
  headers: { ...tokenHeader(alice), 'content-type': 'application/json', ...headers },
  body,
})

// The API's flows, one request each, including every error a caller can provoke.
function normalFlows(): HostileRequest[] {
  const get = (path: string, headers: Record<string, string> = tokenHeader(alice)) => ({
    method: 'GET',
    path,
    headers,
  })
  return [
    post('{"id": 1, "name": "Fern", "tag": "green"}'),
    post('{"id": 1, "name": "Fern", "tag": "green"}'),
    post('{"id": 1, "name": "Other"}'),
    post('{"id": 2, "name": ""}'),
    post('x'.repeat(70_000)),
    post('{}', { 'content-type': 'text/plain' }),
    post('{"id": 3, "name": "x"}', { authorization: 'Bearer nope' }),
    post('{"id": 4, "name": "Ivy"}'),
    get('/plants'),
    get('/plants?limit=1'),
    get('/plants?limit=1&limit=2'),
    get('/plants?after=zzz'),
    get('/plants', {}),
    get('/health'),
    get('/ready'),
    get('/metrics'),
    get('/openapi.json'),
    get('/docs'),
    get('/docs/swagger-ui.css'),
    get('/docs/no-such-file'),
    { method: 'DELETE', path: '/plants', headers: {} },
    get('/nowhere'),
  ]
}

test(`the API's flows and ${HOSTILE_RUNS} hostile requests answer only declared statuses`, async () => {
  const answers: Answer[] = []
  for (const request of normalFlows()) answers.push(await answer(h.app, request))
  const valid = await Promise.all(['alice', 'bob'].map((subject) => h.tokenFor(subject)))
  const hostile = fc.sample(hostileRequest({ valid, tamper: tamperToken }), {
    numRuns: HOSTILE_RUNS,
    seed: 18,
  })
  for (const request of hostile) answers.push(await answer(h.app, request))

  expect(undeclared(h.app.routes, answers)).toEqual([])
  // the requests reached every status the plant routes declare short of a server fault
  const seen = new Set(answers.map(({ method, path, status }) => `${method} ${path} ${status}`))
  for (const status of [200, 400, 401, 409, 413, 415]) expect(seen).toContain(`POST /plants ${status}`)
  for (const status of [200, 400, 401]) expect(seen).toContain(`GET /plants ${status}`)
  expect(seen).toContain('GET /docs/no-such-file 404')
}, 120_000)

test('with the database unreachable, the routes answer only declared statuses', async () => {
  const handle = openPostgres({
    keys: TEST_KEYS,
    url: 'postgres://postgres@127.0.0.1:1/none',
    poolSize: 1,
    statementTimeoutMs: 1000,
  })
  const { app } = testApp({ db: handle.db, keyring: handle.keyring })
  try {
    const answers = [
      await answer(app, post('{"id": 1, "name": "Fern"}')),
      await answer(app, { method: 'GET', path: '/plants', headers: tokenHeader(alice) }),
      await answer(app, { method: 'GET', path: '/ready', headers: {} }),
      await answer(app, { method: 'GET', path: '/metrics', headers: {} }),
    ]
    expect(answers.map(({ status }) => status)).toEqual([503, 503, 503, 200])
    expect(undeclared(app.routes, answers)).toEqual([])
  } finally {
    await handle.close()
  }
}, 60_000)

test('the check can fail: a status the route stopped declaring is reported', () => {
  const routes = h.app.routes
  const withoutConflict = routes.map((route) => {
    const response = { ...(route.hooks.response as Record<string, unknown>) }
    if (route.method === 'POST') delete response['409']
    return { ...route, hooks: { response } }
  })
  const answers = [
    { method: 'POST', path: '/plants', status: 409 },
    { method: 'GET', path: '/plants', status: 200 },
    { method: 'GET', path: '/nowhere', status: 404 },
    { method: 'GET', path: '/health', status: 418 },
  ]
  expect(undeclared(routes, answers)).toEqual(['GET /health 418'])
  expect(undeclared(withoutConflict, answers)).toEqual(['POST /plants 409', 'GET /health 418'])
})
