import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  expectLongAbsenceResumes,
  expectSigtermEndsStreams,
  expectStalledClientDisconnected,
} from '../support/change-scenarios.ts'
import { denoServerCommand } from '../support/deno.ts'
import { postPlant } from '../support/plant-client.ts'
import { SERVER_COMMAND, type ServerProcess } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { changesRequest, openSse, plantOf } from '../support/sse-client.ts'

// The embedded store: the service's own PostgreSQL server, followed as any PostgreSQL is.
const commands: Record<string, (dataDir: string) => string[]> = {
  bun: () => SERVER_COMMAND,
  deno: denoServerCommand,
}

describe.each(Object.keys(commands))('GET /plants/changes on the embedded store, served by %s', (runtime) => {
  let storage: ServiceStorage
  let server: ServerProcess
  const tokenFor = async (subject: string) => (await storage.cli(['token', 'issue', subject])).stdout.trim()

  beforeAll(async () => {
    storage = await startService({
      storage: 'embedded',
      secret: null,
      label: `changes-${runtime}`,
      instances: 0,
    })
    // The local secret is made on the first start; tokens are issued with it.
    server = await storage.startAnother({ NO_COLOR: '1' }, commands[runtime]?.(String(storage.dataDir)))
  }, 120_000)
  afterAll(async () => {
    await storage?.stop()
  })

  test('a plant created after the stream opened arrives; a resumed stream gets exactly the rest', async () => {
    const token = await tokenFor('gardener')
    const live = await openSse(changesRequest(server.url, token))
    expect(live.response.status).toBe(200)
    expect(live.response.headers.get('content-type')).toBe('text/event-stream')
    for (let id = 1; id <= 2; id++)
      expect((await postPlant(server.url, token, { id, name: `p${id}` })).status).toBe(200)
    const [first, second] = await live.take(2)
    expect([first, second].map((event) => event && plantOf(event))).toEqual([
      { id: '1', name: 'p1' },
      { id: '2', name: 'p2' },
    ])
    await live.close()
    expect((await postPlant(server.url, token, { id: 3, name: 'p3', tag: '' })).status).toBe(200)
    const resumed = await openSse(changesRequest(server.url, token, { lastEventId: first?.id }))
    const rest = [...(await resumed.take(2)), ...(await resumed.collectFor(300))]
    expect(rest.map(plantOf)).toEqual([
      { id: '2', name: 'p2' },
      { id: '3', name: 'p3', tag: '' },
    ])
    await resumed.close()
  }, 60_000)

  test('a client back after a long absence gets thousands of plants at the size limits, exact, also reading slowly', async () => {
    await expectLongAbsenceResumes(server, await tokenFor('long-absence'))
  }, 300_000)

  // The embedded PostgreSQL runs in processes of its own: the server's growth is the service's,
  // checked here as on PostgreSQL.
  test('a client that stops reading is disconnected and its stream released', async () => {
    const result = await expectStalledClientDisconnected(
      server,
      await tokenFor('stalled'),
      await tokenFor('warm-up'),
      { runtime: runtime === 'deno' ? 'deno' : 'bun' },
    )
    console.log(`${runtime} embedded stalled client: the server grew ${result.grewMb.toFixed(1)} MB`)
  }, 300_000)

  test('SIGTERM ends the open streams and the server exits at once', async () => {
    await expectSigtermEndsStreams(server, await tokenFor('leaving'))
  }, 60_000)
})
