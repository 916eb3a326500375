import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DENO } from '../support/deno.ts'
import { type Env, runServerToExit, SERVER_COMMAND, startServer } from '../support/server-process.ts'

// A start that cannot go on says why in one line on stderr, naming the setting, with no stack and
// no source excerpt, and exits non-zero within 30 s.
const SECRET = 'start-failures-secret-of-at-least-32-bytes'
const NOT_ONE_LINE = /\bat\s|\.ts:\d|\.js:\d|node_modules|\^|\n./

// Root may write anywhere: the service runs as `nobody` then, for a folder to be out of its reach.
const asUnprivileged =
  process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : []

let folder: string
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'plant-store-start-'))
  // Every user may pass through to the folders made inside.
  await chmod(folder, 0o755)
})
afterAll(async () => {
  await rm(folder, { recursive: true, force: true })
})

// HOME a folder every user may read: some starts run as another user.
const runToExit = (command: string[], env: Env) => runServerToExit({ HOME: '/tmp', ...env }, command)

function expectOneLine(stderr: string, ...naming: (string | RegExp)[]) {
  const lines = stderr.trimEnd().split('\n')
  expect({ lines: lines.length, stack: NOT_ONE_LINE.test(stderr.trimEnd()) }).toEqual({
    lines: 1,
    stack: false,
  })
  for (const name of naming) expect(lines[0]).toMatch(name)
}

const dataDirCases = [
  {
    name: 'a DATA_DIR that is not writable',
    make: async () => {
      const dataDir = join(folder, 'read-only')
      await mkdir(dataDir, { mode: 0o555 })
      await chmod(dataDir, 0o555)
      return dataDir
    },
  },
  {
    name: "a DATA_DIR the service's user may not enter (another user's, mode 0700)",
    make: async () => {
      const dataDir = join(folder, 'closed')
      await mkdir(dataDir)
      await chmod(dataDir, asUnprivileged.length > 0 ? 0o700 : 0o000)
      return dataDir
    },
  },
  {
    name: 'a DATA_DIR whose parent cannot be written',
    make: async () => {
      const parent = join(folder, 'read-only-parent')
      await mkdir(parent)
      await chmod(parent, 0o555)
      return join(parent, 'data')
    },
  },
]

test.each(dataDirCases)(
  'a start with $name stops with one line naming DATA_DIR',
  async ({ make }) => {
    // given a DATA_DIR the service cannot write
    const dataDir = await make()
    // when the service starts on it
    const { stderr, exitCode } = await runToExit([...asUnprivileged, ...SERVER_COMMAND], {
      DATA_DIR: dataDir,
    })
    // then it stops with one line that names the variable and the folder
    expect(exitCode).not.toBe(0)
    expectOneLine(stderr, 'DATA_DIR', dataDir)
  },
  40_000,
)

test('a start on a PORT in use stops with one line naming PORT, and logs no warning before it', async () => {
  // given a port something else listens on
  const taken = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  try {
    // when the service starts on it
    const dataDir = join(folder, 'port-in-use')
    const { stdout, stderr, exitCode } = await runToExit(SERVER_COMMAND, {
      DATA_DIR: dataDir,
      PORT: String(taken.port),
      LOG_FORMAT: 'json',
    })
    // then it stops with one line naming PORT, and nothing on stdout points elsewhere
    expect(exitCode).not.toBe(0)
    expectOneLine(stderr, 'PORT', String(taken.port))
    const warnings = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .filter((line) => (JSON.parse(line) as { level: number }).level >= 40)
    expect(warnings).toEqual([])
  } finally {
    taken.stop(true)
  }
}, 40_000)

test('the Deno start takes a DATA_DIR outside ./data, as the Bun one does', async () => {
  // given a DATA_DIR elsewhere
  const dataDir = join(folder, 'deno-elsewhere')
  // when it starts
  const server = await startServer(
    { HOME: '/tmp', DATA_DIR: dataDir, AUTH_JWT_SECRET: SECRET, LOG_FORMAT: 'json' },
    ['bun', 'run', 'start:deno'],
  )
  try {
    // then it serves from there
    expect((await fetch(`${server.url}/ready`)).status).toBe(200)
    expect(await server.stop('SIGTERM')).toBe(0)
  } finally {
    server.process.kill('SIGKILL')
  }
}, 60_000)

test('a Deno start without the permission its DATA_DIR needs stops with one line naming DATA_DIR', async () => {
  // given Deno allowed to write ./data only, and a DATA_DIR elsewhere
  const dataDir = join(folder, 'deno-not-allowed')
  const command = [DENO, 'run', '--allow-net', '--allow-env', '--allow-sys', '--allow-run', '--allow-read']
  // when the service starts
  const { stderr, exitCode } = await runToExit([...command, '--allow-write=./data', 'src/start/main.ts'], {
    DATA_DIR: dataDir,
    AUTH_JWT_SECRET: SECRET,
  })
  // then it stops with one line that names the variable, the folder and the permission
  expect(exitCode).not.toBe(0)
  expectOneLine(stderr, 'DATA_DIR', dataDir, '--allow-write')
}, 40_000)
