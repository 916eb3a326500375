import { afterEach, expect, test } from 'bun:test'
import { denoServerCommand } from '../support/deno.ts'
import { startLoad } from '../support/feed-load.ts'
import { positionsOf, type TestFeed } from '../support/nats.ts'
import { postPlant, tokenHeader } from '../support/plant-client.ts'
import { runCli } from '../support/server-process.ts'
import { startService } from '../support/service.ts'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

// The positions in the log, in log order, as `events export` writes them after its header and key
// lines (the server is stopped: one process at a time on a data directory).
async function exportedPositions(env: Record<string, string>): Promise<string[]> {
  const exported = await runCli(['events', 'export'], env)
  expect(exported.exitCode).toBe(0)
  return exported.stdout
    .split('\n')
    .filter((line) => line.startsWith('{"position":'))
    .map((line) => (JSON.parse(line) as { position: string }).position)
}

test('embedded store: a SIGKILL mid-burst and a restart leave every event in the stream once, in order', async () => {
  // given a server on the embedded default with the feed on, taking a burst of creations
  // (no AUTH_JWT_SECRET: the embedded default makes its own)
  const store = await startService({
    storage: 'embedded',
    secret: null,
    feed: true,
    label: 'feed',
    instances: 0,
  })
  cleanups.push(store.stop)
  const feed = store.feed as TestFeed
  const env = store.env
  const token = (await runCli(['token', 'issue', 'embedded-feed'], env)).stdout.trim()
  let server = await store.startAnother()
  const burst = startLoad(() => [server.url], token, { workers: 8 })
  await feed.waitFor(30)
  // when it is killed mid-burst and started again
  server.process.kill('SIGKILL')
  await server.process.exited
  await burst.stop()
  server = await store.startAnother()
  expect((await postPlant(server.url, token, { id: 10_000_000, name: 'after restart' })).status).toBe(200)
  await Bun.sleep(1000)
  server.process.kill('SIGTERM')
  await server.process.exited
  // then the stream holds the log, each event once, and feed status says so
  const log = await exportedPositions(env)
  expect(positionsOf(await feed.waitFor(log.length))).toEqual(log)
  const status = await runCli(['feed', 'status'], env)
  expect(status.stdout).toContain(`last published position ${log.at(-1)}`)
  expect(status.stdout).toContain('up to date')
})

test('under Deno: the server publishes the feed, with the permissions the docs give', async () => {
  // given
  const service = await startService({
    label: 'feed_deno',
    feed: true,
    env: { NO_COLOR: '1' },
    command: denoServerCommand(),
  })
  cleanups.push(service.stop)
  const feed = service.feed as TestFeed
  const server = service.server
  const token = await service.tokenFor('deno 🦕', 600)
  // when
  for (const [id, name] of [
    ['9223372036854775807', '\uFEFFBOM'],
    ['2', 'שלום'],
  ] as const) {
    const body = `{"id": ${id}, "name": ${JSON.stringify(name)}, "tag": ""}`
    const response = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { ...tokenHeader(token), 'content-type': 'application/json' },
      body,
    })
    expect(response.status).toBe(200)
  }
  // then
  const messages = await feed.waitFor(2)
  expect(messages.map((message) => JSON.parse(message.body).data)).toEqual([
    { id: '9223372036854775807', name: '\uFEFFBOM', tag: '' },
    { id: '2', name: 'שלום', tag: '' },
  ])
  expect(messages.map((message) => JSON.parse(message.body).owner)).toEqual(['deno 🦕', 'deno 🦕'])
})
