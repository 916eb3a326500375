import { afterAll, describe, expect, test } from 'bun:test'
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { issueToken } from '../../src/auth/issue-token.ts'
import { readLocalSecret } from '../../src/auth/local-secret.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { runCli, SERVER_COMMAND, type ServerProcess, startServer } from '../support/server-process.ts'

// The embedded default's own PostgreSQL server (docs/operating.md, The embedded default): what a killed service leaves
// behind, stale pid files, the CLI beside a running service. These tests run as root, as this
// project's machines do: PostgreSQL then runs as a user of its own (embedded-own-user.e2e.test.ts).

const servers: ServerProcess[] = []
const folders: string[] = []
const sleepers: number[] = []
afterAll(async () => {
  for (const server of servers) server.process.kill('SIGKILL')
  for (const pid of sleepers) isAlive(pid) && process.kill(pid, 'SIGKILL')
  for (const folder of folders) await rm(folder, { recursive: true, force: true })
})

async function dataDir(): Promise<string> {
  const folder = await makeDataDir('plant-store-embedded-')
  folders.push(folder)
  return folder
}

async function started(env: Record<string, string>, command = SERVER_COMMAND): Promise<ServerProcess> {
  const server = await startServer(env, command)
  servers.push(server)
  return server
}

async function tokenFor(folder: string, subject: string): Promise<string> {
  const secret = await readLocalSecret(folder)
  if (!secret) throw new Error('the server made no local secret')
  return issueToken(secret, { subject, ttlSeconds: 600, now: new Date() })
}

async function ownerOf(path: string): Promise<{ uid: number; gid: number }> {
  const { uid, gid } = await stat(path)
  return { uid, gid }
}

async function postmasterPid(folder: string): Promise<number> {
  return Number((await readFile(join(folder, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
}

async function parentOf(pid: number): Promise<number> {
  return Number((await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ')[1])
}

// Running, not exited: an exited process whose parent died waits for init, here a late reaper.
function isAlive(pid: number): boolean {
  const stat = Bun.spawnSync(['cat', `/proc/${pid}/stat`]).stdout.toString()
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

// The watchdog of a postmaster: the shell that started it, and its other children (the reader of
// the service's pipe) with theirs.
function watchdogOf(postmaster: number, watchdog: number): number[] {
  const children = (pid: number): number[] =>
    Bun.spawnSync(['pgrep', '-P', String(pid)])
      .stdout.toString()
      .split('\n')
      .filter((line) => line !== '')
      .map(Number)
      .filter((child) => child !== postmaster)
  const all = [watchdog]
  for (let i = 0; i < all.length; i++) all.push(...children(all[i] as number))
  return all
}

function signalUnlessGone(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
  }
}

async function untilGone(pid: number, withinMs: number): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline; await Bun.sleep(20)) {
    if (!isAlive(pid)) return true
  }
  return false
}

describe('what a dead service leaves behind', () => {
  test('a SIGKILLed service takes its PostgreSQL with it: the watchdog stops the postmaster at once', async () => {
    // given a serving service and its postmaster
    const folder = await dataDir()
    const server = await started({ DATA_DIR: folder })
    const postmaster = await postmasterPid(folder)
    // when the service alone is killed
    server.process.kill('SIGKILL')
    await server.process.exited
    // then its postmaster is gone within a few seconds, stopped cleanly
    expect(await untilGone(postmaster, 5_000)).toBe(true)
    expect(await readFile(join(folder, 'postgres.log'), 'utf8')).toContain('database system is shut down')
  }, 60_000)

  test('a postmaster that outlived its service and its watchdog is stopped by the next start, which loses nothing', async () => {
    // given a service that acknowledged plants
    const folder = await dataDir()
    let server = await started({ DATA_DIR: folder })
    const token = await tokenFor(folder, 'orphan')
    for (let id = 1; id <= 20; id++) {
      expect((await postPlant(server.url, token, { id, name: `plant ${id}` })).status).toBe(200)
    }
    // when its watchdog and then the service are killed, leaving the postmaster running alone
    const postmaster = await postmasterPid(folder)
    // The watchdog's processes are frozen, not killed, all of them before any can act: killed one by
    // one, a process of the tree could still signal the postmaster between two kills. Frozen, the
    // watchdog is as good as dead to the postmaster; the processes are killed once the test is done.
    const watchdog = watchdogOf(postmaster, await parentOf(postmaster))
    for (const pid of watchdog) signalUnlessGone(pid, 'SIGSTOP')
    server.process.kill('SIGKILL')
    await server.process.exited
    await Bun.sleep(300)
    expect(isAlive(postmaster)).toBe(true)
    // then a new start stops that postmaster and serves every plant once from a server of its own
    server = await started({ DATA_DIR: folder })
    expect(isAlive(postmaster)).toBe(false)
    expect(await postmasterPid(folder)).not.toBe(postmaster)
    const names = (await listEveryPlant(server.url, token)).map((plant) => plant.name)
    expect(names).toEqual(Array.from({ length: 20 }, (_, i) => `plant ${i + 1}`))
    expect(await server.stop('SIGTERM')).toBe(0)
    for (const pid of watchdog) signalUnlessGone(pid, 'SIGKILL')
  }, 60_000)

  test('a service whose postmaster is SIGKILLed stops in one line, and the next start serves everything', async () => {
    // given a service that acknowledged a plant
    const folder = await dataDir()
    let server = await started({ DATA_DIR: folder, LOG_FORMAT: 'json' })
    const token = await tokenFor(folder, 'survivor')
    expect((await postPlant(server.url, token, { id: 1, name: 'Survivor' })).status).toBe(200)
    // when its postmaster is killed
    process.kill(await postmasterPid(folder), 'SIGKILL')
    // then the service stops with exit code 1, saying so
    expect(await server.process.exited).toBe(1)
    expect(server.logLines().join('\n')).toContain('the embedded PostgreSQL server stopped')
    // and a start right away (the dead postmaster's children may still hold its memory) serves
    server = await started({ DATA_DIR: folder })
    expect(await listEveryPlant(server.url, token)).toEqual([{ name: 'Survivor' }])
    expect(await server.stop('SIGTERM')).toBe(0)
  }, 60_000)

  test('pid files naming a live, unrelated process of the same user never block a start, and it is never signalled', async () => {
    // given a store that was served and stopped
    const folder = await dataDir()
    let server = await started({ DATA_DIR: folder })
    const token = await tokenFor(folder, 'kept')
    expect((await postPlant(server.url, token, { id: 1, name: 'Kept' })).status).toBe(200)
    expect(await server.stop('SIGTERM')).toBe(0)
    // and PostgreSQL's pid files naming a process of its user that is not a postmaster
    // (PostgreSQL itself refuses to start while such a file names a live process of its user)
    const { uid, gid } = await ownerOf(join(folder, 'postgres'))
    const sleeper = Bun.spawn([
      'setpriv',
      `--reuid=${uid}`,
      `--regid=${gid}`,
      '--clear-groups',
      'sleep',
      '60',
    ])
    sleepers.push(sleeper.pid)
    const pidFile = `${sleeper.pid}\n${join(folder, 'postgres')}\n1764197000\n5432\n${join(folder, 'socket')}\n\n0\nready   \n`
    await writeFile(join(folder, 'postgres', 'postmaster.pid'), pidFile)
    await mkdir(join(folder, 'socket'), { recursive: true })
    await writeFile(join(folder, 'socket', '.s.PGSQL.5432.lock'), pidFile)
    // when the service starts, then it serves, and the process lives on, unsignalled
    server = await started({ DATA_DIR: folder })
    expect(await listEveryPlant(server.url, token)).toEqual([{ name: 'Kept' }])
    expect(sleeper.exitCode).toBeNull()
    expect(isAlive(sleeper.pid)).toBe(true)
    expect(await server.stop('SIGTERM')).toBe(0)
  }, 60_000)
})

describe('the CLI on the DATA_DIR of a running service', () => {
  test('works beside it, on its server, as on PostgreSQL; without one it starts its own for its run', async () => {
    // given a serving service with plants of two owners
    const folder = await dataDir()
    const server = await started({ DATA_DIR: folder })
    const [ada, bo] = await Promise.all([tokenFor(folder, 'ada'), tokenFor(folder, 'bo')])
    expect((await postPlant(server.url, ada, { id: 1, name: 'Aloe' })).status).toBe(200)
    expect((await postPlant(server.url, bo, { id: 1, name: 'Begonia' })).status).toBe(200)
    const postmaster = await postmasterPid(folder)
    // when commands run meanwhile
    const verify = await runCli(['projection', 'verify'], { DATA_DIR: folder })
    const erase = await runCli(['owners', 'erase', '--', 'bo'], { DATA_DIR: folder })
    const exported = await runCli(['events', 'export'], { DATA_DIR: folder })
    // then they work on the service's own server, which goes on serving
    expect({ code: verify.exitCode, out: verify.stdout }).toEqual({
      code: 0,
      out: expect.stringContaining('matches the fold of the log (2 events)'),
    })
    expect({ code: erase.exitCode, out: erase.stdout }).toEqual({ code: 0, out: '1\n' })
    expect(exported.exitCode).toBe(0)
    expect(exported.stdout.split('\n').filter((line) => line.includes('"position"'))).toHaveLength(3)
    expect(await postmasterPid(folder)).toBe(postmaster)
    expect(await listEveryPlant(server.url, bo)).toEqual([])
    expect(await listEveryPlant(server.url, ada)).toEqual([{ name: 'Aloe' }])
    // and once the service has stopped, a command starts a server for its own run and stops it
    expect(await server.stop('SIGTERM')).toBe(0)
    const alone = await runCli(['projection', 'verify'], { DATA_DIR: folder })
    expect(alone.stdout).toContain('matches the fold of the log (3 events)')
    expect(await readFile(join(folder, 'postgres', 'postmaster.pid'), 'utf8').catch(() => 'none')).toBe(
      'none',
    )
  }, 60_000)
})
