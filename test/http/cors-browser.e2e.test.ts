import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Server } from 'bun'
import type { Browser } from 'playwright-core'
import { launchChromium } from '../support/chromium.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { readmeBlock } from '../support/readme.ts'
import { type Service, startService } from '../support/service.ts'

// A browser app on another origin, in the real Chromium: a page served by another port calls the
// service as CORS_ORIGINS allows it, with the docs' change-stream client (docs/live-changes.md); a page of an origin
// the list does not name is blocked by its browser and changes nothing.
let pages: Server<undefined>
let service: Service
let browser: Browser
let token: string
beforeAll(async () => {
  pages = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: () =>
      new Response('<!doctype html><title>plant app</title>', { headers: { 'content-type': 'text/html' } }),
  })
  service = await startService({
    label: 'cors_browser',
    env: { CORS_ORIGINS: `http://127.0.0.1:${pages.port}` },
  })
  token = await service.tokenFor('browser-app', 600)
  browser = await launchChromium()
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await service?.stop()
  await pages?.stop(true)
})

type Seen = { status: number; headers: Record<string, string | null>; body: string }

test('a page of a listed origin creates, lists, revalidates with its ETag and follows the change stream', async () => {
  // given a page served from another origin (another port) than the service's
  const page = await browser.newPage()
  await page.goto(`http://127.0.0.1:${pages.port}/`)
  const client = await readmeBlock('Live changes', 'async function followPlants', 'js')
  // when it calls the service with fetch, as a browser app does
  const seen = await page.evaluate(
    async ([api, bearer, clientCode]) => {
      const read = async (response: Response): Promise<Seen> => ({
        status: response.status,
        headers: Object.fromEntries(
          ['etag', 'link', 'plant-store-position', 'x-request-id', 'content-type'].map((name) => [
            name,
            response.headers.get(name),
          ]),
        ),
        body: await response.text(),
      })
      const auth = { authorization: `Bearer ${bearer}` }
      const post = (body: string) =>
        fetch(`${api}/plants`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body,
        })
      const created = await read(await post('{"id": 9007199254740993, "name": "Cross-origin fern"}'))
      const conflict = await read(await post('{"id": 9007199254740993, "name": "Another"}'))
      const anonymous = await read(await fetch(`${api}/plants`))
      const listed = await read(await fetch(`${api}/plants?limit=1`, { headers: auth }))
      const revalidated = await read(
        await fetch(`${api}/plants?limit=1`, {
          headers: { ...auth, 'if-none-match': listed.headers.etag ?? '' },
        }),
      )
      const follow = new Function(`${clientCode}; return followPlants`)() as (
        token: string,
        lastEventId: string | undefined,
        onPlant: (plant: unknown, id: string) => void,
        api: string,
      ) => Promise<string>
      const followed = await new Promise<unknown>((resolve, reject) => {
        follow(
          bearer,
          created.headers['plant-store-position'] ?? undefined,
          (plant) => resolve(plant),
          api,
        ).catch(reject)
        setTimeout(() => void post('{"id": 2, "name": "Streamed across origins", "tag": "live"}'), 500)
        setTimeout(() => reject(new Error('nothing came on the stream')), 15_000)
      })
      return { created, conflict, anonymous, listed, revalidated, followed }
    },
    [service.url, token, client] as const,
  )
  // then every answer was readable, with the headers a client acts on
  expect(seen.created).toMatchObject({ status: 200, body: '{"name":"Cross-origin fern"}' })
  expect(seen.created.headers['plant-store-position']).toMatch(/^[0-9]+$/)
  expect(seen.created.headers['x-request-id']).toBeTruthy()
  expect(seen.conflict.status).toBe(409)
  expect(JSON.parse(seen.conflict.body)).toMatchObject({ error: 409 })
  expect(seen.conflict.headers['x-request-id']).toBeTruthy()
  expect(seen.anonymous.status).toBe(401)
  expect(seen.listed.status).toBe(200)
  expect(seen.listed.body).toBe('[{"name":"Cross-origin fern"}]')
  expect(seen.listed.headers.etag).toMatch(/^".+"$/)
  expect(seen.revalidated).toMatchObject({ status: 304, body: '' })
  expect(seen.revalidated.headers.etag).toBe(seen.listed.headers.etag)
  expect(seen.followed).toEqual({ id: '2', name: 'Streamed across origins', tag: 'live' })
}, 60_000)

test('a page of an origin the list does not name is blocked by its browser, and nothing is created', async () => {
  // given a page of another origin: the same pages, reached as localhost
  const page = await browser.newPage()
  await page.goto(`http://localhost:${pages.port}/`)
  // when it tries to create a plant and to read /health
  const outcomes = await page.evaluate(
    async ([api, bearer]) => {
      const attempt = (request: Promise<Response>) =>
        request.then(
          (response) => `answered ${response.status}`,
          (error: Error) => `blocked: ${error.name}`,
        )
      return {
        create: await attempt(
          fetch(`${api}/plants`, {
            method: 'POST',
            headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
            body: '{"id": 666, "name": "Smuggled"}',
          }),
        ),
        health: await attempt(fetch(`${api}/health`)),
      }
    },
    [service.url, token] as const,
  )
  // then the browser kept both from the page, and the plant was never created
  expect(outcomes).toEqual({ create: 'blocked: TypeError', health: 'blocked: TypeError' })
  const listed = await fetch(`${service.url}/plants`, { headers: tokenHeader(token) })
  expect(await listed.text()).not.toContain('Smuggled')
}, 60_000)
