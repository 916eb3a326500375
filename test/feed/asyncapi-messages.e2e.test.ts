import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type FeedMessageSeen, TEST_NATS_URL } from '../support/nats.ts'
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.ts'
import { postPlant, tokenHeader } from '../support/plant-client.ts'
import { readmeBlock } from '../support/readme.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'
import { type AsyncApiDocument, messageChecker } from './asyncapi-check.ts'

// The feed's real messages, taken from NATS, checked against the AsyncAPI document the same
// server serves: what a consumer generated from that document would accept.
let service: Service
let receiver: OtlpReceiver
let server: ServerProcess
beforeAll(async () => {
  receiver = await startOtlpReceiver()
  // Traced, so that a create's CloudEvent carries its traceparent as well.
  service = await startService({
    label: 'asyncapi',
    feed: true,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
  })
  server = service.server
})
afterAll(async () => {
  await service?.stop()
  await receiver?.stop()
})

const post = (token: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { ...tokenHeader(token), 'content-type': 'application/json', ...headers },
    body,
  })
const MONSTERA = '{"id":9223372036854775807,"name":"Monstera","tag":"tropical"}'

const firstValues = (message: FeedMessageSeen) =>
  Object.fromEntries(Object.entries(message.headers).map(([name, values]) => [name, values[0] ?? '']))

test('a create, a traced create, a retry and an erasure: every message fits the served document', async () => {
  // given the document the server serves, and its feed
  const document = (await (await fetch(`${server.url}/asyncapi.json`)).json()) as AsyncApiDocument
  const check = messageChecker(document)
  const feed = service.feed
  if (!feed) throw new Error('the service has no feed')
  const ann = await service.tokenFor('ann')
  const bob = await service.tokenFor('bob')
  // when: a create, a traced create without a tag, the first one retried, and Ann erased
  expect((await post(ann, MONSTERA)).status).toBe(200)
  const traced = await post(bob, '{"id":-1,"name":"Fern"}', {
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  })
  expect(traced.status).toBe(200)
  expect((await post(ann, MONSTERA)).status).toBe(200)
  const created = await feed.waitFor(2)
  const erased = await service.cli(['owners', 'erase', '--', 'ann'])
  expect(erased).toMatchObject({ exitCode: 0, stdout: '1\n' })
  // then: Bob's plant and Ann's notice are in the stream (Ann's plant purged, the retry never sent)
  const messages = await feed.waitFor(2)
  const bodies = messages.map((message) => JSON.parse(message.body) as Record<string, unknown>)
  expect(bodies.map((body) => [body.type, body.owner])).toEqual([
    ['PlantCreated', 'bob'],
    ['OwnerErased', 'ann'],
  ])
  expect(bodies[0]?.traceparent).toStartWith('00-4bf92f3577b34da6a3ce929d0e0e4736-')
  const checked = [...created, ...messages].map((message) =>
    check(message.subject, firstValues(message), message.body),
  )
  expect(checked).toEqual([
    { message: 'PlantCreated', errors: [] },
    { message: 'PlantCreated', errors: [] },
    { message: 'PlantCreated', errors: [] },
    { message: 'OwnerErased', errors: [] },
  ])
})

test('a create of the erased owner afterwards fits too, and a tampered message does not', async () => {
  // given
  const check = messageChecker(
    (await (await fetch(`${server.url}/asyncapi.json`)).json()) as AsyncApiDocument,
  )
  const feed = service.feed
  if (!feed) throw new Error('the service has no feed')
  // when the same subject creates a plant again, as a new owner
  expect(
    (await postPlant(server.url, await service.tokenFor('ann'), { id: 1, name: 'Aloe', tag: '' })).status,
  ).toBe(200)
  const messages = await feed.waitFor(3)
  // then
  const last = messages.at(-1)
  if (!last) throw new Error('no message')
  expect(check(last.subject, firstValues(last), last.body)).toEqual({ message: 'PlantCreated', errors: [] })
  const tampered = last.body.replace('"specversion":"1.0"', '"specversion":"0.3"')
  expect(check(last.subject, firstValues(last), tampered).errors).toEqual([
    'payload/specversion must be equal to constant',
  ])
})

test("docs/feed.md's consumer, written from the document, reads this feed", async () => {
  // given the doc's consumer, pointed at this test's NATS and stream (the stream as the tests above left it)
  const feed = service.feed
  if (!feed) throw new Error('the service has no feed')
  const consumer = (await readmeBlock('The event feed', 'plant-store/types', 'ts'))
    .replace('nats://127.0.0.1:4222', TEST_NATS_URL)
    .replace("'PLANT_STORE'", `'${feed.stream}'`)
  // Beside the project's node_modules, so that its imports resolve; `import type` needs no package.
  const file = join(
    new URL('../..', import.meta.url).pathname,
    `node_modules/.cache/feed-consumer-${crypto.randomUUID()}.ts`,
  )
  await Bun.$`mkdir -p ${join(file, '..')}`
  await writeFile(file, consumer)
  const child = Bun.spawn(['bun', file], { stdout: 'pipe', stderr: 'pipe' })
  try {
    // when it has read the three messages
    let output = ''
    const reader = child.stdout.getReader()
    const decoder = new TextDecoder()
    while (output.split('\n').length <= 3) {
      const read = await reader.read()
      if (read.done) break
      output += decoder.decode(read.value)
    }
    // then
    const [created, erased, again] = output.split('\n')
    expect(created).toMatch(/^\d+ bob -1n Fern \(no tag\)$/)
    expect(erased).toBe("drop what was derived from ann's plants")
    expect(again).toMatch(/^\d+ ann 1n Aloe $/)
  } finally {
    child.kill()
    await child.exited
    await rm(file, { force: true })
  }
})
