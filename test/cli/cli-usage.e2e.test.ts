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
  'feed status',
]
const GROUPS = ['token', 'db', 'projection', 'events', 'owners', 'feed']

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

test('each usage is written once: a refusal shows the same usage line as --help', async () => {
  for (const [args, command] of [
    [['token', 'issue', 'alice', '--ttl', '5y'], 'token issue'],
    [['events', 'export', '--after', 'x1'], 'events export'],
    [['projection', 'verify', '--frob'], 'projection verify'],
    [['owners', 'erase', '-dash'], 'owners erase'],
  ] as const) {
    const refused = await runCli([...args], env)
    const help = await runCli([...command.split(' '), '--help'], env)
    const usage = help.stdout.split('\n')[0] ?? ''
    expect({ args, exitCode: refused.exitCode, usage: refused.stderr.split('\n').at(-2) }).toEqual({
      args,
      exitCode: 2,
      usage,
    })
  }
})

test('an unknown command exits non-zero and says which', async () => {
  for (const [args, named] of [
    [['frobnicate'], 'frobnicate'],
    [['token', 'frobnicate'], 'token frobnicate'],
  ] as const) {
    const result = await runCli([...args], env)
    expect(result.exitCode).toBe(2)
    expect(result.stderr.split('\n')[0]).toBe(`unknown command "${named}"`)
    expect(result.stdout).toBe('')
  }
})

test('a bad option value or an unknown option is named', async () => {
  const badTtl = await runCli(['token', 'issue', 'alice', '--ttl', '5y'], env)
  expect(badTtl.exitCode).toBe(2)
  expect(badTtl.stderr.split('\n')[0]).toBe('--ttl: "5y" is not a duration')
  expect(badTtl.stdout).toBe('')

  const badAfter = await runCli(['events', 'export', '--after', 'x1'], env)
  expect(badAfter.exitCode).toBe(2)
  expect(badAfter.stderr.split('\n')[0]).toBe('--after: "x1" is not a position')

  const unknownOption = await runCli(['projection', 'verify', '--frob'], env)
  expect(unknownOption.exitCode).toBe(2)
  expect(unknownOption.stderr).toContain("'--frob'")

  // an owner that looks like options: named whole, with the way to give it
  const dash = await runCli(['owners', 'erase', '-dash'], env)
  expect(dash.exitCode).toBe(2)
  expect(dash.stderr.split('\n')[0]).toBe(
    `unknown option '-d' (in "-dash"); an argument that starts with "-" goes after "--", as in: -- -dash`,
  )
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
