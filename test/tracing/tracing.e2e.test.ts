import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { denoServerCommand } from '../support/deno.ts'
import { createTestFeed, type TestFeed } from '../support/nats.ts'
import { openedLog } from '../support/opened-log.ts'
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.ts'
import { postPlant, tokenHeader } from '../support/plant-client.ts'
import { runCli, runServerToExit, SERVER_COMMAND, type ServerProcess } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'
const SERVER = 2
const CLIENT = 3
const PRODUCER = 4

// A create followed from the caller's trace through the server's request, the batch statement it
// joined and the feed's publish, to the CloudEvent a consumer continues from; then an erasure.
describe('traces over OTLP/HTTP', () => {
  let storage: ServiceStorage
  let sql: postgres.Sql
  let receiver: OtlpReceiver
  let feed: TestFeed
  let server: ServerProcess | undefined
  const token = (subject: string) => storage.tokenFor(subject, 3600)
  const env = () => ({ ...storage.env, ...feed.env })
  const tracingEnv = () => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_SERVICE_NAME: 'plants-under-test',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=overridden,deployment.environment.name=test%20bench',
  })
  // The sealed metadata of each event, opened with its owner's key (null once the key is gone).
  const openedMetadata = async () =>
    (await openedLog(sql, createKeyring(TEST_KEYS)))
      .filter((event) => event.type === 'PlantCreated')
      .map(({ metadata, opened }) => ({ metadata, opened }))
  // The stream's CloudEvents once it holds the whole log (a stream per test, the log shared).
  const cloudEvents = async () => {
    const [log] = await sql<{ events: number }[]>`select count(*)::int as events from events`
    const messages = await feed.waitFor(log?.events ?? 0)
    return messages.map((message) => JSON.parse(message.body) as Record<string, unknown>)
  }

  beforeAll(async () => {
    storage = await startService({ label: 'tracing', instances: 0 })
    sql = postgres(String(storage.databaseUrl), {
      max: 1,
      onnotice: () => {},
    })
  })
  afterEach(async () => {
    server?.process.kill('SIGKILL')
    await server?.process.exited
    server = undefined
    await receiver.stop()
    await feed.drop()
  })
  afterAll(async () => {
    await sql.end()
    await storage.stop()
  })

  test.each([
    ['Bun', SERVER_COMMAND],
    ['Deno', denoServerCommand()],
  ])(
    'given OTEL_* set, under %s, a create with a traceparent: request, batch and publish spans, and the CloudEvent continues the trace',
    async (runtime, command) => {
      // given
      receiver = startOtlpReceiver()
      feed = await createTestFeed('tracing_on')
      server = await storage.startAnother({ ...env(), ...tracingEnv() }, command)
      // when a probe and a scrape come first, then a traced create
      expect((await fetch(`${server.url}/health`)).status).toBe(200)
      expect((await fetch(`${server.url}/metrics`)).status).toBe(200)
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: {
          ...tokenHeader(await token(`traced-owner-on-${runtime}`)),
          'content-type': 'application/json',
          traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
        },
        body: JSON.stringify({ id: 1, name: 'Fern' }),
      })
      const message = (await cloudEvents()).at(-1)
      // SIGTERM flushes the spans still buffered
      expect(await server.stop('SIGTERM')).toBe(0)
      // then the request's span is the child of the caller's
      expect(response.status).toBe(200)
      expect(response.headers.get('traceparent')).toBeNull()
      const spans = receiver.spans()
      const request = spans.find((span) => span.name === 'POST /plants')
      expect(request).toMatchObject({
        traceId: CALLER_TRACE,
        parentSpanId: CALLER_SPAN,
        kind: SERVER,
        serviceName: 'plants-under-test',
        resource: { 'service.name': 'plants-under-test', 'deployment.environment.name': 'test bench' },
        attributes: {
          'http.route': '/plants',
          'http.response.status_code': 200,
          'http.request.method': 'POST',
        },
      })
      // and the batch statement it opened is its child
      expect(spans.find((span) => span.name === 'append_events')).toMatchObject({
        traceId: CALLER_TRACE,
        parentSpanId: request?.spanId,
        kind: CLIENT,
        attributes: { 'db.operation.batch.size': 1 },
      })
      // and so is the feed's publish of its event
      const publish = spans.find(
        (span) => span.kind === PRODUCER && span.attributes['messaging.message.id'] === message?.id,
      )
      expect(publish).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: request?.spanId })
      // and the CloudEvent carries the request's context for a consumer to continue
      expect(message?.traceparent).toBe(`00-${CALLER_TRACE}-${request?.spanId}-01`)
      // and the event keeps it sealed: not in its metadata's plain text, only once opened with the key
      const stored = (await openedMetadata()).at(-1)
      expect(Object.keys(stored?.metadata ?? {}).sort()).toEqual(['gcm', 'pseudonym'])
      expect(JSON.stringify(stored?.metadata)).not.toContain(CALLER_TRACE)
      expect(stored?.opened?.traceparent).toBe(`00-${CALLER_TRACE}-${request?.spanId}-01`)
      // and the probe and the scrape made no span
      expect(spans.map((span) => span.attributes['url.path'])).not.toContain('/health')
      expect(spans.map((span) => span.attributes['url.path'])).not.toContain('/metrics')
    },
  )

  test('given OTEL_* set, creates that share a batch: its span is the child of one and links the others', async () => {
    // given
    receiver = startOtlpReceiver()
    feed = await createTestFeed('tracing_batch')
    server = await storage.startAnother({ ...env(), ...tracingEnv() })
    const url = server.url
    const auth = tokenHeader(await token('batched-owner'))
    // when a burst of creates arrives at once, each from a trace of its own
    const traces = Array.from({ length: 40 }, (_, index) => `${(index + 1).toString(16).padStart(32, 'a')}`)
    const answers = await Promise.all(
      traces.map((trace, index) =>
        fetch(`${url}/plants`, {
          method: 'POST',
          headers: {
            ...auth,
            'content-type': 'application/json',
            traceparent: `00-${trace}-${CALLER_SPAN}-01`,
          },
          body: JSON.stringify({ id: 100 + index, name: `Burst ${index}` }),
        }),
      ),
    )
    expect(await server.stop('SIGTERM')).toBe(0)
    // then every request was answered, and at least one batch carried several of them
    expect(answers.map((answer) => answer.status)).toEqual(traces.map(() => 200))
    const spans = receiver.spans()
    const requests = spans.filter((span) => span.name === 'POST /plants' && traces.includes(span.traceId))
    expect(requests).toHaveLength(traces.length)
    const batches = spans.filter((span) => span.name === 'append_events')
    expect(batches.some((batch) => Number(batch.attributes['db.operation.batch.size']) > 1)).toBe(true)
    // and each batch is the child of one request and links every other one it carried
    const served = batches.flatMap((batch) => {
      const parent = requests.find((request) => request.spanId === batch.parentSpanId)
      expect(parent?.traceId).toBe(batch.traceId)
      expect(batch.links).toHaveLength(Number(batch.attributes['db.operation.batch.size']) - 1)
      return [batch.parentSpanId, ...batch.links.map((link) => link.spanId)]
    })
    expect(served.sort()).toEqual(requests.map((request) => request.spanId).sort())
  })

  test('given OTEL_* set, a create without a traceparent starts a trace of its own', async () => {
    // given
    receiver = startOtlpReceiver()
    feed = await createTestFeed('tracing_root')
    server = await storage.startAnother({ ...env(), ...tracingEnv() })
    // when
    const response = await postPlant(server.url, await token('untraced-caller'), { id: 2, name: 'Ivy' })
    const messages = await cloudEvents()
    expect(await server.stop('SIGTERM')).toBe(0)
    // then
    expect(response.status).toBe(200)
    const request = receiver.spans().find((span) => span.name === 'POST /plants')
    expect(request?.parentSpanId).toBeUndefined()
    expect(request?.traceId).not.toBe(CALLER_TRACE)
    expect(messages.at(-1)?.traceparent).toBe(`00-${request?.traceId}-${request?.spanId}-01`)
  })

  test('given OTEL_* unset, nothing is sent, no traceparent is kept and the CloudEvent has none', async () => {
    // given
    receiver = startOtlpReceiver()
    feed = await createTestFeed('tracing_off')
    server = await storage.startAnother({ ...env(), OTEL_SERVICE_NAME: 'unused-without-endpoint' })
    // when a caller sends its traceparent
    const response = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: {
        ...tokenHeader(await token('owner-off')),
        'content-type': 'application/json',
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      },
      body: JSON.stringify({ id: 3, name: 'Moss' }),
    })
    const messages = await cloudEvents()
    expect(await server.stop('SIGTERM')).toBe(0)
    // then
    expect(response.status).toBe(200)
    expect(receiver.posts()).toBe(0)
    expect(server.startLines.join('\n')).not.toContain('tracing on')
    expect(messages.at(-1)?.traceparent).toBeUndefined()
    expect(messages.at(-1)?.data).toEqual({ id: '3', name: 'Moss' })
    expect((await openedMetadata()).at(-1)?.opened).toEqual({ requestId: expect.any(String) })
  })

  test('a bad OTEL_* value: one line naming it, and nothing sent', async () => {
    // given
    receiver = startOtlpReceiver()
    feed = await createTestFeed('tracing_bad')
    // when
    const refused = await runServerToExit({
      ...env(),
      ...tracingEnv(),
      OTEL_TRACES_SAMPLER: 'sometimes',
    })
    // then
    expect(refused.exitCode).toBe(2)
    expect(refused.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^plant store cannot start: OTEL_TRACES_SAMPLER must be one of always_on, /),
    ])
    expect(receiver.posts()).toBe(0)
  })

  test('given OTEL_* set, owners erase sends a span for the erasure and one for each of its steps', async () => {
    // given the traced owner's event, with its traceparent sealed
    receiver = startOtlpReceiver()
    feed = await createTestFeed('tracing_erase')
    server = await storage.startAnother({ ...env(), ...tracingEnv() })
    expect((await postPlant(server.url, await token('erased-owner'), { id: 4, name: 'Sage' })).status).toBe(
      200,
    )
    await cloudEvents()
    // when
    const erased = await runCli(['owners', 'erase', 'erased-owner'], { ...env(), ...tracingEnv() })
    // then
    expect(erased).toMatchObject({ exitCode: 0, stdout: '1\n' })
    const root = await receiver.waitForSpan('erase owner')
    expect(root.parentSpanId).toBeUndefined()
    expect(root.attributes).toEqual({ 'plant_store.erasure.completed': 1 })
    const steps = receiver.spans().filter((span) => span.parentSpanId === root.spanId)
    expect(steps.map((span) => span.name)).toEqual([
      'erasure: hide the owner',
      'erasure: await the notice in the stream',
      'erasure: purge the stream',
      'erasure: await imports',
      'erasure: delete the key',
      'erasure: drop dead work tables',
      'erasure: refresh statistics',
    ])
    expect(steps.every((span) => span.traceId === root.traceId)).toBe(true)
    // and no span names the owner
    expect(JSON.stringify(receiver.spans())).not.toContain('erased-owner')
    // and the erased owner's traceparent died with the key
    const owners = await sql`select 1 from owner_keys where owner = 'erased-owner'`
    expect(owners).toHaveLength(0)
  })
})
