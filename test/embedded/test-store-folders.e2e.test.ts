import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readlinkSync } from 'node:fs'
import { chmod, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Where users' test stores (createInMemoryStore) keep their server, and how many one process
// holds. Each test process here is test/embedded/fixtures/test-stores.ts, in a temporary folder of
// its own that every local user may write in, as /tmp is.
const ROOT = new URL('../..', import.meta.url).pathname
const FIXTURE = 'test/embedded/fixtures/test-stores.ts'
const POSTGRES_UID = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())

type Outcome = { created: number[]; listed: unknown[]; refused?: string; pids?: number[] }

const started: number[] = []
const folders: string[] = []
afterAll(async () => {
  for (const pid of started) isRunning(pid) && process.kill(pid, 'SIGKILL')
  for (const folder of folders) await rm(folder, { recursive: true, force: true })
})

function isRunning(pid: number): boolean {
  const stat = Bun.spawnSync(['cat', `/proc/${pid}/stat`]).stdout.toString()
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

// A folder like /tmp: anyone writes in it, and only an entry's owner removes it.
async function sharedTmp(): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-shared-tmp-'))
  folders.push(folder)
  await chmod(folder, 0o1777)
  return folder
}

function spawnFixture(tmp: string, args: string[], asUser: string[] = []) {
  // Bun keeps files of its own in HOME: a folder apart, so that `tmp` holds only the stores'.
  const home = `${tmp}-home`
  Bun.spawnSync(['install', '-d', '-m', '1777', home])
  folders.push(home)
  const child = Bun.spawn([...asUser, 'bun', FIXTURE, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  started.push(child.pid)
  return child
}

// Its printed line, once printed (a process started with `--stay` goes on running).
async function runFixture(tmp: string, args: string[], asUser: string[] = []): Promise<Outcome> {
  const child = spawnFixture(tmp, args, asUser)
  const reader = child.stdout.getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`the test process failed: ${await new Response(child.stderr).text()}`)
    text += new TextDecoder().decode(value)
  }
  return JSON.parse(text.split('\n')[0] ?? '') as Outcome
}

const plantsOf = (count: number) => Array.from({ length: count }, (_, index) => [{ name: `plant ${index}` }])

// Every file and folder under `folder`, as paths relative to it.
function entriesOf(folder: string): string[] {
  return readdirSync(folder, { recursive: true }).map(String).sort()
}

// What is left in `tmp` besides a cache of the user's own: a folder `plant-store-<uid>` that holds
// only complete data folders (`cluster-<hash>` with its PG_VERSION).
function leftovers(tmp: string): string[] {
  return readdirSync(tmp).flatMap((name) => {
    if (!/^plant-store-\d+$/.test(name)) return [name]
    return readdirSync(join(tmp, name))
      .filter(
        (inner) => !/^cluster-[0-9a-f]+$/.test(inner) || !existsSync(join(tmp, name, inner, 'PG_VERSION')),
      )
      .map((inner) => join(name, inner))
  })
}

// Processes working in `tmp` (a server, initdb, a copy), by their working folder.
function processesIn(tmp: string): number[] {
  return readdirSync('/proc')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && isRunning(pid))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`).startsWith(`${tmp}/`)
      } catch {
        return false
      }
    })
}

describe("a user's test stores", () => {
  test('folder names another local user took first break no store, and none of their folders is used', async () => {
    // given the folders a test process of the postgres user makes in a shared temporary folder
    const asVictim = ['setpriv', `--reuid=${POSTGRES_UID}`, '--regid=postgres', '--init-groups']
    const learned = await sharedTmp()
    expect((await runFixture(learned, ['1'], asVictim)).created).toEqual([200])
    const names = readdirSync(learned)
    expect(names.length).toBeGreaterThan(0)
    // and another local user (nobody) who made each of those names first, in a fresh one
    const tmp = await sharedTmp()
    for (const name of names) {
      const squat = `mkdir -p "$0/data" && echo 18 > "$0/data/PG_VERSION" && chmod -R a+rwX "$0"`
      const made = Bun.spawnSync(['runuser', '-u', 'nobody', '--', 'sh', '-c', squat, join(tmp, name)])
      expect(made.exitCode).toBe(0)
    }
    // when the postgres user's test process opens its stores there
    const outcome = await runFixture(tmp, ['2', '--pids', '--stay'], asVictim).catch(
      (error: Error): Outcome => ({ created: [], listed: [], refused: error.message }),
    )
    // then they work, on a server whose folder is the user's own and none of the squatted ones
    expect(outcome).toMatchObject({ created: [200, 200], listed: plantsOf(2) })
    const [postmaster] = outcome.pids ?? []
    const data = readlinkSync(`/proc/${postmaster}/cwd`)
    expect(names.some((name) => data.startsWith(join(tmp, name, '/')))).toBe(false)
    expect(Bun.spawnSync(['stat', '-c', '%u', data]).stdout.toString().trim()).toBe(String(POSTGRES_UID))
  }, 120_000)

  test.each([0, 300, 700])(
    'a test process killed %i ms into making its first store leaves nothing behind but a complete cache',
    async (delayMs) => {
      // given a test process making its first store in an empty temporary folder
      const tmp = await sharedTmp()
      const child = spawnFixture(tmp, ['1', '--stay'])
      let printed = ''
      void new Response(child.stdout).text().then((text) => {
        printed = text
      })
      for (const deadline = Date.now() + 30_000; readdirSync(tmp).length === 0; await Bun.sleep(5)) {
        if (Date.now() > deadline) throw new Error('the test process made no folder')
      }
      await Bun.sleep(delayMs)
      // when it is killed before its store is ready
      child.kill('SIGKILL')
      await child.exited
      expect(printed).toBe('')
      // then within seconds nothing runs there, and nothing is left but a complete cache
      for (const deadline = Date.now() + 20_000; Date.now() < deadline; await Bun.sleep(100)) {
        if (leftovers(tmp).length === 0 && processesIn(tmp).length === 0) break
      }
      expect({ left: leftovers(tmp), running: processesIn(tmp) }).toEqual({ left: [], running: [] })
      expect(entriesOf(tmp).some((path) => path.includes('making') || path.includes('memory'))).toBe(false)
    },
    60_000,
  )

  test("as root, its server runs as a user of the test stores' own, not as the user a DATA_DIR's server runs as", async () => {
    // given a test process run as root
    const outcome = await runFixture(await sharedTmp(), ['1', '--pids', '--stay'])
    // then its server's user is neither root nor the one an embedded service's PostgreSQL runs as
    const [postmaster] = outcome.pids ?? []
    const status = Bun.spawnSync(['cat', `/proc/${postmaster}/status`]).stdout.toString()
    const uid = /\nUid:\t(\d+)\t/.exec(status)?.[1] ?? ''
    expect(Bun.spawnSync(['id', '-nu', uid]).stdout.toString().trim()).toBe('plant-store-throwaway')
  }, 60_000)

  test('one process holds 100 stores at once, each serving; one more is refused, saying the limit', async () => {
    // given a test process that opens 101 stores, one after another, a plant created in each
    const outcome = await runFixture(tmpdir(), ['101'])
    // then the first 100 created their plant and list it, all at once
    expect(outcome.created).toEqual(Array.from({ length: 100 }, () => 200))
    expect(outcome.listed).toEqual(plantsOf(100))
    // and the 101st open was refused with the limit and what to do
    expect(outcome.refused).toContain('at most 100 stores open at once')
    expect(outcome.refused).toContain('close()')
  }, 120_000)
})
