import { afterAll, beforeAll } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchChromium } from './chromium.ts'
import { type Service, startService } from './service.ts'

// For the tests of the calling file: the embedded default (no secret given, so that the service
// makes its own) with its server, and a Chromium to open its pages in; started before the tests,
// closed after them. Each getter answers once the start is done.
export function browsedService(label: string, startTimeoutMs: number) {
  let service: Service | undefined
  let browser: Browser | undefined
  beforeAll(async () => {
    service = await startService({ storage: 'embedded', secret: null, label })
    browser = await launchChromium()
  }, startTimeoutMs)
  afterAll(async () => {
    await browser?.close()
    await service?.stop()
  })
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the service and the browser start before the tests')
    return value
  }
  return {
    service: () => started(service),
    server: () => started(service).server,
    browser: () => started(browser),
  }
}
