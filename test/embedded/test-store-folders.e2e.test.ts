import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readlinkSync } from 'node:fs'
import { chmod, rm, writeFile } from 'node:fs/promises'
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

// Processes working in `tmp` (a server, initdb, a copy), by their working folder, and those whose
// command line names it (the server's watchdog).
function processesWorkingFor(tmp: string): number[] {
  const named = readdirSync('/proc')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid !== process.pid && isRunning(pid))
    .filter((pid) =>
      Bun.spawnSync(['cat', `/proc/${pid}/cmdline`])
        .stdout.toString()
        .includes(`${tmp}/`),
    )
  return [...new Set([...processesIn(tmp), ...named])]
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

  test('a test that runs past its timeout, and tests that fail, leave nothing behind, and close() after them raises nothing', async () => {
    // given a test file as a user writes it: a store in beforeAll, closed in afterAll; a test that
    // stalls on a change stream past its timeout, one that fails, and one after them
    const tmp = await sharedTmp()
    const project = mkdtempSync(join(tmpdir(), 'plant-store-stalled-suite-'))
    folders.push(project)
    await writeFile(
      join(project, 'stalled.test.ts'),
      STALLED_SUITE.replace('TEST_STORE', join(ROOT, 'src/test-store.ts')),
    )
    // when bun test runs it
    const run = Bun.spawn(['bun', 'test', './stalled.test.ts'], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', HOME: project, TMPDIR: tmp },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(run.stdout).text(),
      new Response(run.stderr).text(),
      run.exited,
    ])
    // then the two tests fail as they should, and nothing else does: no failure of close()'s own
    const results = `${stdout}${stderr}`.split('\n').filter((line) => /^\((pass|fail)\)/.test(line))
    expect({ exitCode, results: results.map((line) => line.replace(/ \[[\d.]+m?s\]$/, '')) }).toEqual({
      exitCode: 1,
      results: ['(fail) stalls past its timeout', '(fail) fails', '(pass) the store still serves after them'],
    })
    expect(`${stdout}${stderr}`).not.toMatch(/ECONNRESET|Unhandled error|\(unnamed\)/)
    // and within seconds nothing runs there, and nothing is left but a complete cache
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await Bun.sleep(100)) {
      if (leftovers(tmp).length === 0 && processesIn(tmp).length === 0) break
    }
    expect({ left: leftovers(tmp), running: processesIn(tmp) }).toEqual({ left: [], running: [] })
  }, 120_000)

  test("a test process SIGKILLed with its server and the server's watchdog leaves a folder that the next test process removes", async () => {
    // given a test process whose store is open, killed with every process that works for it
    const tmp = await sharedTmp()
    const child = spawnFixture(tmp, ['1', '--pids', '--stay'])
    const reader = child.stdout.getReader()
    for (let text = ''; !text.includes('\n'); ) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`the test process failed: ${await new Response(child.stderr).text()}`)
      text += new TextDecoder().decode(value)
    }
    // (each stopped first, so that none of them sees another die and cleans up)
    const killed = [child.pid, ...processesWorkingFor(tmp)]
    expect(killed.length).toBeGreaterThan(2)
    for (const signal of ['SIGSTOP', 'SIGKILL'] as const)
      for (const pid of killed) isRunning(pid) && process.kill(pid, signal)
    await child.exited
    await Bun.sleep(1000)
    const left = leftovers(tmp)
    expect(left.filter((name) => name.startsWith('plant-store-memory-'))).toHaveLength(1)
    // (older than a folder that a live process may have only begun to make)
    for (const name of left) Bun.spawnSync(['touch', '-h', '-d', '1 minute ago', join(tmp, name)])
    // when the next test process opens a store there, and ends
    expect((await runFixture(tmp, ['1'])).created).toEqual([200])
    // then nothing is left but a complete cache
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await Bun.sleep(100)) {
      if (leftovers(tmp).length === 0 && processesIn(tmp).length === 0) break
    }
    expect({ left: leftovers(tmp), running: processesIn(tmp) }).toEqual({ left: [], running: [] })
  }, 120_000)
})

// A user's test file: TEST_STORE becomes the path of src/test-store.ts.
const STALLED_SUITE = `import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createInMemoryStore, type InMemoryStore } from 'TEST_STORE'

let store: InMemoryStore
beforeAll(async () => {
  store = await createInMemoryStore()
}, 60_000)
afterAll(() => store.close())

const get = async (path: string) =>
  store.app.handle(new Request(\`http://localhost\${path}\`, { headers: { authorization: \`Bearer \${await store.tokenFor('ann')}\` } }))

test('stalls past its timeout', async () => {
  const changes = await get('/plants/changes')
  const reader = changes.body?.getReader()
  while (reader && !(await reader.read()).done) {}
}, 1000)

test('fails', async () => {
  expect((await get('/plants')).status).toBe(201)
})

test('the store still serves after them', async () => {
  expect((await get('/plants')).status).toBe(200)
})
`
