import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readlinkSync } from 'node:fs'
import { dirname } from 'node:path'
import { DENO } from '../support/deno.ts'
import { treePssMb } from '../support/pss.ts'

// Users' test suites (createInMemoryStore): one PostgreSQL server per test process in a temporary
// folder, gone with the process however it ends, within the memory a CI runner can spare.
const ROOT = new URL('../..', import.meta.url).pathname
const USER = 'test/embedded/fixtures/in-memory-user.ts'
const RUNTIMES = {
  bun: ['bun', USER],
  deno: [DENO, 'run', '--allow-all', USER],
}

const started: number[] = []
afterAll(() => {
  for (const pid of started) isRunning(pid) && process.kill(pid, 'SIGKILL')
})

function isRunning(pid: number): boolean {
  const stat = Bun.spawnSync(['cat', `/proc/${pid}/stat`]).stdout.toString()
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

describe.each(Object.entries(RUNTIMES))('a test process on %s', (_runtime, command) => {
  test('holds six stores in one server within 250 MB (its PSS and its PostgreSQL processes), and a SIGKILL of it leaves nothing behind', async () => {
    // given a test process with six stores open
    const child = Bun.spawn(command, { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: process.env })
    started.push(child.pid)
    const reader = child.stdout.getReader()
    const { value } = await reader.read()
    const { pids } = JSON.parse(new TextDecoder().decode(value)) as { pids: number[] }
    const [postmaster] = pids
    if (postmaster === undefined) throw new Error('no server process ids')
    const folder = dirname(readlinkSync(`/proc/${postmaster}/cwd`))
    // The list is a moment's children of the server: a backend or autovacuum worker among them may
    // have ended since, so the server itself and its resident helpers are what must be running.
    expect(isRunning(postmaster)).toBe(true)
    expect(pids.filter(isRunning).length).toBeGreaterThan(3)
    // then it and its server hold at most 250 MB together
    expect(treePssMb(child.pid)).toBeLessThan(250)
    // when the test process is killed
    child.kill('SIGKILL')
    await child.exited
    // then its server and its folder are gone within seconds
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await Bun.sleep(50)) {
      if (!pids.some(isRunning) && !existsSync(folder)) break
    }
    expect(pids.filter(isRunning)).toEqual([])
    expect(existsSync(folder)).toBe(false)
  }, 60_000)
})
