import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchChromium } from '../support/chromium.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

let service: Service
let server: ServerProcess
let browser: Browser

beforeAll(async () => {
  // The embedded default, its secret its own.
  service = await startService({ storage: 'embedded', secret: null, label: 'docs' })
  server = service.server
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await service?.stop()
})

test('GET /docs loads in a real browser with no failed or outside requests and shows both operations', async () => {
  // given a fresh page that records every request, failure and console error
  const page = await browser.newPage()
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
  const response = await page.goto(`${server.url}/docs`, { waitUntil: 'networkidle' })
  expect(response?.status()).toBe(200)

  // then both operations are shown, rendered from the service's own OpenAPI document
  const operations = page.locator('.opblock-summary')
  await operations.first().waitFor({ timeout: 15_000 })
  const summaries = (await operations.allInnerTexts()).map((text) => text.replace(/\s+/g, ' '))
  expect(summaries.some((text) => /POST \/plants/.test(text))).toBe(true)
  expect(summaries.some((text) => /GET \/plants/.test(text))).toBe(true)
  expect(requested).toContain(`${server.url}/openapi.json`)
  // and everything came from the service itself, with nothing failing
  expect(requested.filter((url) => !url.startsWith(server.url) && !url.startsWith('data:'))).toEqual([])
  expect(failed).toEqual([])
  expect(consoleErrors).toEqual([])
}, 60_000)
