import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serveEmbeddedDefault } from '../support/embedded-default.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { runServerToExit, type ServerProcess } from '../support/server-process.ts'
import type { ServiceStorage } from '../support/service.ts'

// The zero-setup default, as a newcomer runs it: no settings, a data directory, a CLI token.
describe('the embedded default', () => {
  let storage: ServiceStorage
  let dataDir: string
  let server: ServerProcess
  let token: string
  beforeAll(async () => {
    ;({ storage, server, token } = await serveEmbeddedDefault('e2e', ['alice', '--ttl', '1h']))
    dataDir = String(storage.dataDir)
  })
  afterAll(async () => {
    await storage?.stop()
  })

  const authorized = (init: RequestInit = {}) => ({
    ...init,
    headers: { ...tokenHeader(token), 'content-type': 'application/json', ...init.headers },
  })

  test('the generated secret is kept in the data directory, readable by its owner only', async () => {
    expect((await stat(join(dataDir, 'auth-secret'))).mode & 0o777).toBe(0o600)
  })

  test('a CLI token creates and lists plants over real HTTP', async () => {
    const created = await fetch(
      `${server.url}/plants`,
      authorized({ method: 'POST', body: '{"id": 9007199254740993, "name": "Fern"}' }),
    )
    expect(created.status).toBe(200)
    expect(await created.json()).toEqual({ name: 'Fern' })
    const listed = await fetch(`${server.url}/plants`, authorized())
    expect(await listed.json()).toEqual([{ name: 'Fern' }])
  })

  test('a second process cannot open the same data directory', async () => {
    const second = await runServerToExit({ DATA_DIR: dataDir })
    expect(second.exitCode).toBe(1)
    expect(second.stderr).toContain('in use')
  })

  test('SIGTERM lets a request in flight finish, exits 0, and the data survives a restart', async () => {
    // A body that arrives slowly keeps the request in flight while the signal lands.
    let sendRest: () => void = () => {}
    const restSent = new Promise<void>((resolve) => {
      sendRest = resolve
    })
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('{"id": 2, "name": "Slow'))
        await restSent
        controller.enqueue(new TextEncoder().encode('"}'))
        controller.close()
      },
    })
    const inFlight = fetch(
      `${server.url}/plants`,
      authorized({ method: 'POST', body, duplex: 'half' } as RequestInit),
    )
    await Bun.sleep(300)
    const exited = server.stop('SIGTERM')
    await Bun.sleep(300)
    sendRest()
    const response = await inFlight
    expect(response.status).toBe(200)
    expect(await exited).toBe(0)

    server = await storage.startAnother()
    const listed = await fetch(`${server.url}/plants`, authorized())
    expect(await listed.json()).toEqual([{ name: 'Fern' }, { name: 'Slow' }])
    const retry = await fetch(
      `${server.url}/plants`,
      authorized({ method: 'POST', body: '{"id": 9007199254740993, "name": "Fern"}' }),
    )
    expect(retry.status).toBe(200)
    const neighbour = await fetch(
      `${server.url}/plants`,
      authorized({ method: 'POST', body: '{"id": 9007199254740992, "name": "Fern"}' }),
    )
    expect(neighbour.status).toBe(200)
  })
})

describe('refusing to start', () => {
  test.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ AUTH_JWT_SECRET: 'too-short' }, 'AUTH_JWT_SECRET'],
    [{ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres' }, 'AUTH_JWT_SECRET'],
    [{ DATA_DIR: 'memory:' }, 'AUTH_JWT_SECRET'],
  ])('with %p the server exits non-zero naming %s', async (env, variable) => {
    const result = await runServerToExit({ DATA_DIR: join(tmpdir(), 'plant-store-never-used'), ...env })
    expect(result.exitCode).not.toBe(0)
    expect(result.stderr).toContain(variable)
  })
})
