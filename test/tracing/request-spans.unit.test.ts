import { expect, test } from 'bun:test'
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions'
import { Elysia } from 'elysia'
import { requestSpans } from '../../src/tracing/request-spans.ts'
import type { Tracing } from '../../src/tracing/tracing.ts'

// request-spans.ts spells the stable HTTP attribute names rather than load the package at start.
test("the request span's attribute names are OpenTelemetry's stable HTTP ones", async () => {
  const source = await Bun.file(new URL('../../src/tracing/request-spans.ts', import.meta.url)).text()
  for (const [constant, name] of Object.entries({
    ATTR_HTTP_REQUEST_METHOD,
    ATTR_HTTP_RESPONSE_STATUS_CODE,
    ATTR_HTTP_ROUTE,
    ATTR_URL_PATH,
  }))
    expect(source).toContain(`const ${constant} = '${name}'`)
})

// A Tracing that records the spans started and ended, in place of the SDK.
function recordingTracing() {
  const ended: string[] = []
  const tracing: Tracing = {
    startSpan: (name) => ({
      traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`,
      end: (end) => {
        ended.push(end?.name ?? name)
      },
    }),
    shutdown: async () => {},
  }
  return { tracing, ended }
}

test('probes and scrapes make no span; every other request does, named by its route', async () => {
  // given an app traced by requestSpans, with the probes, the scrape and an API route
  const { tracing, ended } = recordingTracing()
  const app = new Elysia()
    .use(requestSpans(tracing).plugin)
    .get('/health', () => 'ok')
    .get('/ready', () => 'ready')
    .get('/metrics', () => '')
    .get('/plants', () => [])
    .get('/healthy-plants', () => [])
  // when each is requested (the probes as Kubernetes and Prometheus send them, with a query)
  for (const path of ['/health', '/ready?verbose=1', '/metrics', '/plants', '/healthy-plants'])
    await app.handle(new Request(`http://localhost${path}`))
  await Bun.sleep(10)
  // then
  expect(ended).toEqual(['GET /plants', 'GET /healthy-plants'])
})
