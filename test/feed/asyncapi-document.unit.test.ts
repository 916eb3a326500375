import { describe, expect, test } from 'bun:test'
import { Parser } from '@asyncapi/parser'
import type { LoggedEvent } from '../../src/event-log/reading.ts'
import { buildAsyncApiDocument } from '../../src/feed/asyncapi-document.ts'
import { toPublishedMessage } from '../../src/feed/cloud-event.ts'
import { CLOUD_EVENTS_CONTENT_TYPE } from '../../src/feed/feed-schemas.ts'
import { docsRoutes } from '../../src/openapi/docs-routes.ts'
import { type AsyncApiDocument, messageChecker } from './asyncapi-check.ts'
import { logged as loggedEvent, PSEUDONYM, settings } from './logged-event.ts'

async function servedDocument(): Promise<{ response: Response; document: AsyncApiDocument }> {
  const response = await docsRoutes(() => [], {}, buildAsyncApiDocument()).handle(
    new Request('http://localhost/asyncapi.json'),
  )
  return { response, document: (await response.clone().json()) as AsyncApiDocument }
}

// With the lowest id a plant may have.
function logged(overrides: Partial<LoggedEvent>): LoggedEvent {
  return loggedEvent({ data: { id: '-9223372036854775808', name: 'Max', tag: null }, ...overrides })
}

const HEADERS = {
  'Content-Type': CLOUD_EVENTS_CONTENT_TYPE,
  'Nats-Msg-Id': '12',
  'Plant-Store-Log-Transaction': '7',
}

describe('GET /asyncapi.json', () => {
  test('is an AsyncAPI 3.0 document that the AsyncAPI parser takes with no error and no warning', async () => {
    // given
    const { response, document } = await servedDocument()
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(document.asyncapi).toBe('3.0.0')
    // when
    const parsed = await new Parser().parse(JSON.stringify(document))
    // then: severity 0 is an error, 1 a warning; the one hint left says that 3.1 exists
    expect(parsed.document).toBeDefined()
    expect(parsed.diagnostics.filter((found) => found.severity <= 1).map((found) => found.message)).toEqual(
      [],
    )
  })

  test('its schemas fit the messages the feed builds, and refuse a message that breaks them', async () => {
    // given
    const check = messageChecker((await servedDocument()).document)
    const built = [
      toPublishedMessage(logged({}), settings),
      toPublishedMessage(logged({ data: { id: '7', name: 'Fern', tag: '' } }), settings),
      toPublishedMessage(
        logged({
          metadata: {
            owner: 'bob',
            pseudonym: PSEUDONYM,
            traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
          },
        }),
        settings,
      ),
      toPublishedMessage(logged({ type: 'OwnerErased', data: null }), settings),
    ]
    // when
    const checked = built.map((message) => message && check(message.subject, HEADERS, message.body))
    // then
    expect(checked).toEqual([
      { message: 'PlantCreated', errors: [] },
      { message: 'PlantCreated', errors: [] },
      { message: 'PlantCreated', errors: [] },
      { message: 'OwnerErased', errors: [] },
    ])
    const plant = built[0]?.body ?? ''
    const withNumberId = plant.replace('"id":"-9223372036854775808"', '"id":-9223372036854775808')
    expect(check(built[0]?.subject ?? '', HEADERS, withNumberId).errors).toEqual([
      'payload/data/id must be string',
    ])
    expect(check(built[0]?.subject ?? '', { ...HEADERS, 'Nats-Msg-Id': 'x' }, plant).errors).toHaveLength(1)
    expect(check('plant-store.events.PlantDeleted', HEADERS, plant).errors).toHaveLength(1)
  })
})
