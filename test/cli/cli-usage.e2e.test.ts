import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { makeDataDirSync } from '../support/data-dir.ts'
import { runCli } from '../support/server-process.ts'

// A data directory of its own: `token issue` keeps the local secret there.
const dataDir = makeDataDirSync('plant-store-cli-')
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))
const env = { DATA_DIR: dataDir }

const COMMANDS = [
  'token issue',
  'db migrate',
  'projection rebuild',
  'projection verify',
  'projection status',
  'events export',
  'events import',
  'owners erase',
  'keys rotate',
  'feed status',
]
const GROUPS = ['token', 'db', 'projection', 'events', 'owners', 'keys', 'feed']

test('bun run cli --help prints the usage on stdout, naming every command, and exits 0', async () => {
  for (const help of [['--help'], ['-h'], ['help'], []]) {
    const result = await runCli(help, env)
    if (help.length === 0) {
      // no command at all is a mistake: the usage, on stderr, exit 2
      expect(result.exitCode).toBe(2)
      expect(result.stderr).toContain('usage: bun run cli')
      continue
    }
    expect({ help, exitCode: result.exitCode, stderr: result.stderr }).toEqual({
      help,
      exitCode: 0,
      stderr: '',
    })
    for (const command of COMMANDS) expect(result.stdout).toContain(command)
  }
})

test.each(COMMANDS)(
  '%s --help prints its usage on stdout and exits 0, without touching a store',
  async (command) => {
    // DATABASE_URL pointing nowhere: help must not need the configuration to be usable
    const result = await runCli([...command.split(' '), '--help'], {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nothing',
    })
    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' })
    expect(result.stdout).toStartWith(`usage: bun run cli ${command}`)
  },
)

test.each(GROUPS)(
  '%s --help lists its commands, the variables they read and the exit codes',
  async (group) => {
    // given a DATABASE_URL pointing nowhere: help reads no configuration
    for (const help of ['--help', '-h']) {
      // when
      const result = await runCli([group, help], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nothing' })
      // then
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' })
      expect(result.stdout).toStartWith(`usage: bun run cli ${group} <command>`)
      for (const command of COMMANDS.filter((name) => name.startsWith(`${group} `)))
        expect(result.stdout).toContain(`\n  ${command}`)
      expect(result.stdout).toContain('environment variables read')
      expect(result.stdout).toMatch(
        /exit codes:\n {2}0 {2}done\n([\s\S]*\n)? {2}2 {2}a bad argument or setting/,
      )
    }
  },
)

test('a group without its command shows the group on stderr and exits 2', async () => {
  const result = await runCli(['projection'], env)
  expect(result.exitCode).toBe(2)
  expect(result.stdout).toBe('')
  expect(result.stderr).toStartWith('usage: bun run cli projection <command>')
})

// What each command says it reads and how it ends, as the configuration table has them.
test.each([
  [
    'token issue',
    ['AUTH_JWT_SECRET', 'AUTH_JWKS_URL', 'DATA_DIR', 'DATABASE_URL'],
    ['EVENTS_NATS_URL', 'PORT'],
  ],
  [
    'events import',
    ['DATABASE_URL', 'DATA_DIR', 'DATABASE_POOL_SIZE'],
    ['AUTH_JWT_SECRET', 'EVENTS_NATS_URL'],
  ],
  ['projection verify', ['DATABASE_URL', 'DATA_DIR'], ['AUTH_JWT_SECRET', 'HOST']],
  ['owners erase', ['DATABASE_URL', 'EVENTS_NATS_URL', 'EVENTS_NATS_STREAM'], ['AUTH_JWT_SECRET']],
  ['feed status', ['DATABASE_URL', 'EVENTS_NATS_URL'], ['AUTH_JWT_SECRET', 'CORS_ORIGINS']],
])('%s --help names the variables it reads (%p) and no others (%p)', async (command, reads, ignores) => {
  const result = await runCli([...command.split(' '), '--help'], {})
  expect(result.exitCode).toBe(0)
  const variables = result.stdout.slice(result.stdout.indexOf('environment variables read'))
  for (const name of reads) expect(variables).toContain(`\n  ${name} `)
  for (const name of ignores) expect(variables).not.toContain(`\n  ${name} `)
  expect(result.stdout).toContain('\nexit codes:\n  0  done\n')
})

test("the help's purposes start in one column, apart from every usage", async () => {
  for (const args of [['--help'], ['projection', '--help'], ['owners', '--help']]) {
    // when
    const { stdout } = await runCli(args, env)
    // then each command's line has its usage, two spaces or more, and its purpose at one column
    const lines = stdout
      .split('\n')
      .filter((line) => COMMANDS.some((command) => line.startsWith(`  ${command}`)))
    expect(lines.length).toBeGreaterThan(0)
    const columns = lines.map((line) => /^ {2}\S.*?\S( {2,})(?=\S)/.exec(line)?.[0].length ?? -1)
    expect({ args, columns: new Set(columns).size, apart: columns.every((column) => column > 0) }).toEqual({
      args,
      columns: 1,
      apart: true,
    })
  }
})

test('a refusal is one line on stderr naming what was wrong and the help to read, exit 2, nothing on stdout', async () => {
  for (const [args, said] of [
    [['frobnicate'], 'unknown command "frobnicate"; see bun run cli --help'],
    [['token', 'frobnicate'], 'unknown command "token frobnicate"; see bun run cli token --help'],
    [
      ['token', 'issue', 'alice', '--ttl', '5y'],
      '--ttl: "5y" is not a duration; see bun run cli token issue --help',
    ],
    [
      ['events', 'export', '--after', 'x1'],
      '--after: "x1" is not a position; see bun run cli events export --help',
    ],
    [
      ['projection', 'verify', '--frob'],
      `unknown option '--frob'; an argument that starts with "-" goes after "--", as in: -- --frob; see bun run cli projection verify --help`,
    ],
    // an owner that looks like options: named whole, with the way to give it
    [
      ['owners', 'erase', '-dash'],
      `unknown option '-d' (in "-dash"); an argument that starts with "-" goes after "--", as in: -- -dash; see bun run cli owners erase --help`,
    ],
  ] as const) {
    const refused = await runCli([...args], env)
    expect({ args, exitCode: refused.exitCode, stdout: refused.stdout, stderr: refused.stderr }).toEqual({
      args,
      exitCode: 2,
      stdout: '',
      stderr: `${said}\n`,
    })
  }
})

test('a subject of 128 or 255 emoji is accepted, one of 256 code points is refused', async () => {
  const sprout = '\u{1F331}'
  for (const count of [128, 255]) {
    const result = await runCli(['token', 'issue', sprout.repeat(count)], env)
    expect({ count, exitCode: result.exitCode, stderr: result.stderr }).toEqual({
      count,
      exitCode: 0,
      stderr: '',
    })
  }
  const tooLong = await runCli(['token', 'issue', sprout.repeat(256)], env)
  expect(tooLong.exitCode).toBe(2)
  expect(tooLong.stderr).toContain('1 to 255')
})
