import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { DENO, denoServerCommand } from '../support/deno.ts'
import { tokenHeader } from '../support/plant-client.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'

// The same entry, src/start/main.ts, served by Deno (the pinned binary: see test/support/deno.ts).

type Storage = { store: ServiceStorage; command: string[] }

const storages: Record<string, () => Promise<Storage>> = {
  embedded: async () => {
    // No AUTH_JWT_SECRET: the embedded default makes its own.
    const store = await startService({ storage: 'embedded', secret: null, label: 'deno', instances: 0 })
    return { store, command: denoServerCommand(store.dataDir) }
  },
  postgres: async () => {
    const store = await startService({ label: 'deno', instances: 0 })
    return { store, command: denoServerCommand() }
  },
}

test('the pinned deno is installed by the lockfile', () => {
  expect(existsSync(DENO)).toBe(true)
})

describe.each(Object.keys(storages))('the server on Deno, %s storage', (kind) => {
  let storage: Storage
  let server: ServerProcess
  let token: string
  beforeAll(async () => {
    storage = await (storages[kind] as () => Promise<Storage>)()
    const issued = await storage.store.cli(['token', 'issue', `deno-${kind}`])
    expect(issued.exitCode).toBe(0)
    token = issued.stdout.trim()
    server = await storage.store.startAnother({ NO_COLOR: '1' }, storage.command)
  }, 60_000)
  afterAll(async () => {
    await storage?.store.stop()
  })

  const call = (path: string, init: RequestInit & { auth?: string } = {}) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: {
        ...(init.auth === undefined ? tokenHeader(token) : { authorization: init.auth }),
        'content-type': 'application/json',
        ...init.headers,
      },
    })
  const create = (body: string, init: RequestInit & { auth?: string } = {}) =>
    call('/plants', { method: 'POST', body, ...init })

  test('health, readiness, metrics, the OpenAPI document and the docs page answer', async () => {
    expect(await (await call('/health')).json()).toEqual({ status: 'ok' })
    expect((await call('/ready')).status).toBe(200)
    const metrics = await call('/metrics')
    expect(metrics.headers.get('content-type')).toContain('text/plain')
    const text = await metrics.text()
    expect(text).toContain('plant_store_http_requests_total')
    // The process's own figures, measured by Deno too (where /proc/self is closed to it, the
    // resident memory comes from the runtime rather than a 0).
    const figure = (name: string) => Number(new RegExp(`^${name} (.+)$`, 'm').exec(text)?.[1])
    expect(figure('process_resident_memory_bytes')).toBeGreaterThan(10_000_000)
    expect(figure('process_cpu_seconds_total')).toBeGreaterThan(0)
    // Right after the start the delay histogram may hold no sample yet: a number, 0 or more.
    expect(figure('nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0)
    const document = (await (await call('/openapi.json')).json()) as { openapi: string; paths: object }
    expect(document.openapi).toStartWith('3.1')
    expect(Object.keys(document.paths)).toContain('/plants')
    expect(await (await call('/docs')).text()).toContain('/docs/swagger-ui-bundle.js')
    expect((await call('/docs/swagger-ui-bundle.js')).status).toBe(200)
    // compressed as asked, once, by the service rather than Deno's server; then a 304 on its tag
    const bundle = await fetch(`${server.url}/docs/swagger-ui-bundle.js`, {
      headers: { 'accept-encoding': 'br' },
      decompress: false,
    })
    expect(bundle.headers.get('content-encoding')).toBe('br')
    expect((await bundle.arrayBuffer()).byteLength).toBeLessThan(600_000)
    const tag = bundle.headers.get('etag') ?? 'none'
    expect(tag).toMatch(/^"[A-Za-z0-9_-]+-br"$/)
    const reloaded = await fetch(`${server.url}/docs/swagger-ui-bundle.js`, {
      headers: { 'accept-encoding': 'br', 'if-none-match': tag },
    })
    expect(reloaded.status).toBe(304)
  })

  test('creates exactly, retries safely, conflicts, and refuses bad input with the Error body', async () => {
    const created = await create('{"id": 9007199254740993, "name": "Fern", "tag": "shade"}')
    expect(created.status).toBe(200)
    expect(await created.json()).toEqual({ name: 'Fern', tag: 'shade' })
    expect((await create('{"id": 9007199254740993, "name": "Fern", "tag": "shade"}')).status).toBe(200)
    // 9007199254740992 is another plant: the id is exact under Deno too
    expect((await create('{"id": 9007199254740992, "name": "Palm"}')).status).toBe(200)
    const conflict = await create('{"id": 9007199254740993, "name": "Cactus"}')
    expect(conflict.status).toBe(409)
    expect(await conflict.json()).toMatchObject({ error: 409 })
    const cases: [Response, number][] = [
      [await create('{"id": 1.5, "name": "x"}'), 400],
      [await create('{"id": 3, "name": "x"}', { auth: '' }), 401],
      [await create('{"id": 3, "name": "x"}', { auth: 'Bearer not-a-jwt' }), 401],
      [await create('{"id": 3, "name": "x"}', { headers: { 'content-type': 'text/plain' } }), 415],
      [await create(JSON.stringify({ id: 3, name: 'x'.repeat(70_000) })), 413],
      [await call('/plants', { method: 'DELETE' }), 405],
      [await call('/nowhere'), 404],
    ]
    for (const [response, status] of cases) {
      expect(response.status).toBe(status)
      expect(await response.json()).toMatchObject({ error: status })
      expect(response.headers.get('x-request-id')).toBeTruthy()
    }
  })

  test('lists the caller’s plants, streamed whole and page by page through Link', async () => {
    expect(await (await call('/plants')).json()).toEqual([{ name: 'Fern', tag: 'shade' }, { name: 'Palm' }])
    const first = await call('/plants?limit=1')
    expect(await first.json()).toEqual([{ name: 'Fern', tag: 'shade' }])
    const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1]
    expect(next).toBeDefined()
    expect(await (await call(next as string)).json()).toEqual([{ name: 'Palm' }])
    expect((await call('/plants?limit=-1')).status).toBe(400)
  })

  test('SIGTERM drains and exits 0', async () => {
    expect(await server.stop('SIGTERM')).toBe(0)
  })
})
