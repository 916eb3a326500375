import { expect, test } from 'bun:test'
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions'

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
