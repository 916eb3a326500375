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
  'feed status',
]

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
