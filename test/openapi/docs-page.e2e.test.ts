import { expect, test } from 'bun:test'
import { browsedService } from '../support/browsed-service.ts'

const { server, browser } = browsedService('docs', 60_000)

test('GET /docs loads in a real browser with no failed or outside requests and shows both operations', async () => {
  // given a fresh page that records every request, failure and console error
  const page = await browser().newPage()
  const requested: string[] = []
  const failed: string[] = []
  const consoleErrors: string[] = []
  page.on('request', (request) => requested.push(request.url()))
  page.on('requestfailed', (request) => failed.push(`${request.url()} ${request.failure()?.errorText}`))
  page.on('response', (response) => {
    if (response.status() >= 400) failed.push(`${response.url()} ${response.status()}`)
  })
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  page.on('pageerror', (error) => consoleErrors.push(error.message))

  // when it opens the reference page
  const response = await page.goto(`${server().url}/docs`, { waitUntil: 'networkidle' })
  expect(response?.status()).toBe(200)

  // then both operations are shown, rendered from the service's own OpenAPI document
  const operations = page.locator('.opblock-summary')
  await operations.first().waitFor({ timeout: 15_000 })
  const summaries = (await operations.allInnerTexts()).map((text) => text.replace(/\s+/g, ' '))
  expect(summaries.some((text) => /POST \/plants/.test(text))).toBe(true)
  expect(summaries.some((text) => /GET \/plants/.test(text))).toBe(true)
  expect(requested).toContain(`${server().url}/openapi.json`)
  // and everything came from the service itself, with nothing failing
  expect(requested.filter((url) => !url.startsWith(server().url) && !url.startsWith('data:'))).toEqual([])
  expect(failed).toEqual([])
  expect(consoleErrors).toEqual([])
}, 60_000)

type LoggedRequest = { msg?: string; method?: string; path?: string; status?: number }

// The requests the server logged after the first `from` lines of its log.
function loggedSince(from: number): LoggedRequest[] {
  return server()
    .logLines()
    .slice(from)
    .map((line) => JSON.parse(line) as LoggedRequest)
    .filter((entry) => entry.msg === 'request')
}

test('the page and its files arrive compressed, and a reload costs only 304s', async () => {
  // given a fresh page (an empty cache) that records what each answer from the service weighed
  const page = await browser().newPage()
  const answers: Promise<{ path: string; status: number; coding?: string; bytes: number }>[] = []
  page.on('response', (response) => {
    if (!response.url().startsWith(server().url)) return
    answers.push(
      response
        .request()
        .sizes()
        .then((sizes) => ({
          path: new URL(response.url()).pathname,
          status: response.status(),
          coding: response.headers()['content-encoding'],
          bytes: sizes.responseBodySize,
        })),
    )
  })
  // when it opens the reference page, and shows the operations of the document it fetched
  await page.goto(`${server().url}/docs`, { waitUntil: 'networkidle' })
  await page.locator('.opblock-summary').first().waitFor({ timeout: 15_000 })
  const loaded = await Promise.all(answers)
  // then Swagger UI's 1.7 MB bundle came compressed, as the browser asked, to under 600 KB
  const bundle = loaded.find(({ path }) => path === '/docs/swagger-ui-bundle.js')
  expect(bundle?.status).toBe(200)
  expect(['br', 'gzip']).toContain(bundle?.coding ?? 'none')
  expect(bundle?.bytes ?? Infinity).toBeLessThan(600_000)
  for (const path of ['/docs', '/docs/swagger-ui.css', '/openapi.json']) {
    expect({ path, coding: loaded.find((answer) => answer.path === path)?.coding }).toEqual({
      path,
      coding: bundle?.coding,
    })
  }

  // when it reloads
  const logged = server().logLines().length
  await page.reload({ waitUntil: 'networkidle' })
  await page.locator('.opblock-summary').first().waitFor({ timeout: 15_000 })
  // then what the browser asked the service again was answered 304, no body sent again
  const again = loggedSince(logged).map(({ method, path, status }) => `${method} ${path} ${status}`)
  expect(again).toContain('GET /docs 304')
  expect(again).toContain('GET /openapi.json 304')
  expect(again.filter((line) => !line.endsWith(' 304'))).toEqual([])
}, 60_000)
