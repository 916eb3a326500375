import { afterAll, describe, expect, test } from 'bun:test'
import { type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { checkProjection } from '../support/projection-check.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const OWNERS = ['ada', 'bo', 'cy']
const WORKERS = 24
// The kill lands once this many creations were acknowledged, with many more in flight.
const ACKNOWLEDGED_BEFORE_KILL = 60

type Acknowledged = { owner: string; name: string }

// Concurrent creations until the process dies under them; returns the ones answered 200.
async function burstUntilKilled(url: string, tokens: Map<string, string>, kill: () => void) {
  const acknowledged: Acknowledged[] = []
  const unexpected: number[] = []
  let unanswered = 0
  let nextId = 1
  let killed = false
  const worker = async () => {
    while (!killed) {
      const id = nextId++
      const owner = OWNERS[id % OWNERS.length] as string
      const name = `plant-${id}`
      try {
        const response = await postPlant(url, tokens.get(owner) ?? '', { id, name, tag: `t${id % 7}` })
        if (response.status === 200) acknowledged.push({ owner, name })
        else unexpected.push(response.status)
      } catch {
        // The connection died with the process: this creation was never acknowledged.
        unanswered++
      }
      if (!killed && acknowledged.length >= ACKNOWLEDGED_BEFORE_KILL) {
        killed = true
        kill()
      }
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, worker))
  return { acknowledged, unexpected, unanswered }
}

type Setup = {
  store: ServiceStorage
  openDatabase: () => Promise<DatabaseHandle>
}

async function crashAndRecover({ store, openDatabase }: Setup) {
  const tokenFor = (owner: string) => store.tokenFor(owner, 600)
  // given a server taking a burst of concurrent creations
  let server = await store.startAnother()
  const tokens = new Map(await Promise.all(OWNERS.map(async (o) => [o, await tokenFor(o)] as const)))
  // when it is killed with SIGKILL mid-burst and started again on the same storage
  const { acknowledged, unexpected, unanswered } = await burstUntilKilled(server.url, tokens, () =>
    server.process.kill('SIGKILL'),
  )
  expect(await server.process.exited).not.toBe(0)
  expect(server.process.signalCode).toBe('SIGKILL')
  expect(unexpected).toEqual([])
  // the kill landed mid-burst: creations were in flight and never got an answer
  expect(unanswered).toBeGreaterThan(0)
  server = await store.startAnother()
  let listedInAll = 0
  try {
    // then every acknowledged plant is listed, and no plant is listed twice
    for (const owner of OWNERS) {
      const names = (await listEveryPlant(server.url, tokens.get(owner) ?? '')).map((plant) => plant.name)
      expect(new Set(names).size).toBe(names.length)
      for (const plant of acknowledged.filter((ack) => ack.owner === owner)) {
        expect(names).toContain(plant.name)
      }
      listedInAll += names.length
    }
  } finally {
    expect(await server.stop('SIGTERM')).toBe(0)
  }
  // and the projection is exactly the fold of the log
  const handle = await openDatabase()
  try {
    const report = await checkProjection(handle.db, handle.keyring)
    expect(report.mismatches).toBe(0)
    expect(report.events).toBe(report.plants)
    expect(report.events).toBeGreaterThanOrEqual(acknowledged.length)
    // and the listings showed every projected plant: nothing stored is hidden from its owner
    expect(listedInAll).toBe(report.plants)
  } finally {
    await handle.close()
  }
  // and the service's own check agrees
  const verify = await store.cli(['projection', 'verify'])
  expect({ exitCode: verify.exitCode, stdout: verify.stdout }).toEqual({
    exitCode: 0,
    stdout: expect.stringContaining('matches the fold of the log'),
  })
}

describe('a SIGKILL in the middle of a burst of creations loses no acknowledged write', () => {
  const cleanups: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup()
  })

  test('on PostgreSQL', async () => {
    const store = await startService({ label: 'crash', instances: 0, env: { DATABASE_POOL_SIZE: '5' } })
    cleanups.push(store.stop)
    await crashAndRecover({
      store,
      openDatabase: async () =>
        openPostgres({
          keys: TEST_KEYS,
          url: String(store.databaseUrl),
          poolSize: 1,
          statementTimeoutMs: 10_000,
        }),
    })
  }, 60_000)

  test('on the embedded default, where the lock went with the killed server', async () => {
    // No AUTH_JWT_SECRET: the server makes its own in DATA_DIR, as the default does.
    const store = await startService({ storage: 'embedded', secret: null, label: 'crash', instances: 0 })
    cleanups.push(store.stop)
    await crashAndRecover({
      store,
      openDatabase: () => openStorage({ kind: 'embedded', dataDir: String(store.dataDir) }),
    })
  }, 60_000)
})
