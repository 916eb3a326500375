import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { issueToken } from '../../src/auth/issue-token.ts'
import { readLocalSecret } from '../../src/auth/local-secret.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { denoServerCommand } from '../support/deno.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { runCli, runServerToExit, type ServerProcess, startServer } from '../support/server-process.ts'

// `bun run start` as a supervisor runs it: `bun run` is the parent, the server its child, both in
// a process group of their own that a SIGKILL takes down at once.
const START = ['bun', 'run', 'start']
const ROUNDS = 5

// SIGKILL to the whole group; resolves once the group's leader (the parent) has exited.
async function killGroup(server: ServerProcess): Promise<void> {
  process.kill(-server.process.pid, 'SIGKILL')
  await server.process.exited
}

async function tokenFor(dataDir: string, subject: string): Promise<string> {
  const secret = await readLocalSecret(dataDir)
  if (!secret) throw new Error('the server made no local secret')
  return issueToken(secret, { subject, ttlSeconds: 600, now: new Date() })
}

// Creations from several workers until `stop` is called; the names answered 200.
function burst(url: string, token: string, firstId: number) {
  const acknowledged: string[] = []
  let stopped = false
  let nextId = firstId
  const worker = async () => {
    while (!stopped) {
      const id = nextId++
      try {
        const response = await postPlant(url, token, { id, name: `plant-${id}` })
        if (response.status === 200) acknowledged.push(`plant-${id}`)
      } catch {
        // The process died under this request: it was never acknowledged.
      }
    }
  }
  const running = Promise.all(Array.from({ length: 8 }, worker))
  return {
    acknowledged,
    stop: async () => {
      stopped = true
      await running
    },
  }
}

describe('one process per data directory, by a lock the operating system releases', () => {
  const dataDirs: string[] = []
  const servers: ServerProcess[] = []
  let dataDir: string
  beforeEach(async () => {
    dataDir = await makeDataDir('plant-store-lock-')
    dataDirs.push(dataDir)
  })
  afterAll(async () => {
    for (const server of servers) {
      try {
        process.kill(-server.process.pid, 'SIGKILL')
      } catch {
        server.process.kill('SIGKILL')
      }
    }
    for (const dir of dataDirs) await rm(dir, { recursive: true, force: true })
  })
  const started = async (...args: Parameters<typeof startServer>) => {
    const server = await startServer(...args)
    servers.push(server)
    return server
  }

  test(`a start right after a SIGKILL of the whole process group succeeds, ${ROUNDS} rounds in a row, losing nothing acknowledged`, async () => {
    // given a server started as a supervisor starts it
    let server = await started({ DATA_DIR: dataDir }, START, { ownGroup: true })
    const token = await tokenFor(dataDir, 'survivor')
    const acknowledged: string[] = []
    for (let round = 0; round < ROUNDS; round++) {
      // when its process group is killed in the middle of a burst of creations
      const creations = burst(server.url, token, round * 100_000 + 1)
      while (creations.acknowledged.length < 20) await Bun.sleep(5)
      const killed = killGroup(server)
      await creations.stop()
      await killed
      acknowledged.push(...creations.acknowledged)
      // then a start as soon as the parent has exited succeeds
      server = await started({ DATA_DIR: dataDir }, START, { ownGroup: true })
      // and every creation acknowledged so far is there
      const names = new Set((await listEveryPlant(server.url, token)).map((plant) => plant.name))
      expect(acknowledged.filter((name) => !names.has(name))).toEqual([])
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(ROUNDS * 20)
    await killGroup(server)
  }, 120_000)

  test('a second live server is refused at once, naming the directory, and the first keeps serving', async () => {
    const first = await started({ DATA_DIR: dataDir })
    const token = await tokenFor(dataDir, 'first')
    const startedAt = performance.now()
    const second = await runServerToExit({ DATA_DIR: dataDir })
    expect(performance.now() - startedAt).toBeLessThan(5_000)
    expect(second.exitCode).toBe(1)
    expect(second.stderr).toContain(`DATA_DIR ${dataDir} is in use`)
    expect((await postPlant(first.url, token, { id: 1, name: 'Still here' })).status).toBe(200)
    expect(await listEveryPlant(first.url, token)).toEqual([{ name: 'Still here' }])
    expect(await first.stop('SIGTERM')).toBe(0)
  }, 60_000)

  test('a lock file left behind naming a live, unrelated process does not block a start', async () => {
    // given the lock file names this test process, which is alive and holds no lock
    await writeFile(join(dataDir, 'server.pid'), `${process.pid}\n`)
    // when the server starts, then it serves
    const server = await started({ DATA_DIR: dataDir })
    expect((await fetch(`${server.url}/health`)).status).toBe(200)
    expect(await server.stop('SIGTERM')).toBe(0)
  }, 60_000)

  test('the CLI works beside the live server, and alone at once after a SIGKILL', async () => {
    const server = await started({ DATA_DIR: dataDir }, START, { ownGroup: true })
    const beside = await runCli(['projection', 'status'], { DATA_DIR: dataDir })
    expect({ exitCode: beside.exitCode, stdout: beside.stdout }).toEqual({
      exitCode: 0,
      stdout: expect.stringContaining('up to date'),
    })
    await killGroup(server)
    await writeFile(join(dataDir, 'server.pid'), `${process.pid}\n`)
    const verify = await runCli(['projection', 'verify'], { DATA_DIR: dataDir })
    expect({ exitCode: verify.exitCode, stdout: verify.stdout }).toEqual({
      exitCode: 0,
      stdout: expect.stringContaining('matches the fold of the log'),
    })
  }, 60_000)

  test('under Deno too: the Bun CLI works beside it, and it restarts right after a SIGKILL', async () => {
    const command = denoServerCommand(dataDir)
    let server = await started({ DATA_DIR: dataDir, NO_COLOR: '1' }, command, { ownGroup: true })
    const beside = await runCli(['projection', 'status'], { DATA_DIR: dataDir })
    expect(beside.stdout).toContain('up to date')
    const token = await tokenFor(dataDir, 'deno-user')
    expect((await postPlant(server.url, token, { id: 1, name: 'Deno' })).status).toBe(200)
    await killGroup(server)
    server = await started({ DATA_DIR: dataDir, NO_COLOR: '1' }, command, { ownGroup: true })
    expect(await listEveryPlant(server.url, token)).toEqual([{ name: 'Deno' }])
    const second = await runServerToExit({ DATA_DIR: dataDir })
    expect(second.stderr).toContain(`DATA_DIR ${dataDir} is in use`)
    await killGroup(server)
  }, 60_000)
})
