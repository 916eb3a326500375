import { expect, test } from 'bun:test'
import { asksForHelp, parseArguments } from '../../src/cli/arguments.ts'
import { eventsExportCommand, eventsImportCommand } from '../../src/cli/events-command.ts'
import { ownersEraseCommand } from '../../src/cli/owners-command.ts'
import { projectionRebuildCommand, projectionStatusCommand } from '../../src/cli/projection-command.ts'
import { tokenIssueCommand } from '../../src/cli/token-command.ts'
import { loadConfig } from '../../src/config/config.ts'

const TTL = { ttl: { type: 'string', default: '24h' } } as const

function refusal(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  return undefined
}

test('options and positionals parse in any order, with defaults and the --name=value form', () => {
  expect(parseArguments(['--ttl', '1h', 'alice'], TTL, 1)).toEqual({
    values: { ttl: '1h' },
    positionals: ['alice'],
  })
  expect(parseArguments(['alice', '--ttl=2d'], TTL, 1).values.ttl).toBe('2d')
  expect(parseArguments(['alice'], TTL, 1).values.ttl).toBe('24h')
})

test('-- ends the options: what follows is an argument, whatever it looks like', () => {
  for (const argument of ['--help', '-h', '-x', '--', '-dash', '--ttl'])
    expect(parseArguments(['--ttl', '1h', '--', argument], TTL, 1)).toEqual({
      values: { ttl: '1h' },
      positionals: [argument],
    })
})

test('help is asked for by --help or -h before --, and only there', () => {
  expect(asksForHelp(['--help'])).toBe(true)
  expect(asksForHelp(['alice', '-h'])).toBe(true)
  expect(asksForHelp(['--', '--help'])).toBe(false)
  expect(asksForHelp(['--wait', '1s', '--', '-h'])).toBe(false)
  expect(asksForHelp(['alice'])).toBe(false)
})

test('an unknown option, a missing value or an extra positional is a usage error naming it', () => {
  for (const [args, named] of [
    [['alice', '--nope'], "'--nope'"],
    [['alice', '--ttl'], "'--ttl"],
    [['alice', 'bob'], '"bob"'],
    [['-t', '1h'], "'-t'"],
  ] as const) {
    const thrown = refusal(() => parseArguments([...args], TTL, 1))
    expect(thrown).toMatchObject({ code: 'BAD_USAGE' })
    expect((thrown as Error).message).toContain(named)
  }
})

test('an argument that looks like options is named whole, with the hint to put it after --', () => {
  const thrown = refusal(() => parseArguments(['-dash'], TTL, 1))
  expect(thrown).toMatchObject({ code: 'BAD_USAGE' })
  expect((thrown as Error).message).toBe(
    `unknown option '-d' (in "-dash"); an argument that starts with "-" goes after "--", as in: -- -dash`,
  )
})

// Each command refuses bad arguments before it opens any storage: a config that could not be
// opened shows that nothing was reached. The refusal is one line, pointing at the command's help.
const config = loadConfig({ DATA_DIR: '/nonexistent/plant-store-cli-test' })

test.each([
  [
    'rebuild',
    () => projectionRebuildCommand.run(['--dry-run', 'now'], config),
    'unexpected argument "now"; see bun run cli projection rebuild --help',
  ],
  [
    'status',
    () => projectionStatusCommand.run(['--verbose'], config),
    'unknown option \'--verbose\'; an argument that starts with "-" goes after "--", as in: -- --verbose; see bun run cli projection status --help',
  ],
  ['export', () => eventsExportCommand.run(['--after', '-1'], config), "'--after' argument is ambiguous"],
  ['export', () => eventsExportCommand.run(['--after', '01'], config), '--after: "01" is not a position'],
  [
    'import',
    () => eventsImportCommand.run(['--append=yes'], config),
    "Option '--append' does not take an argument; see bun run cli events import --help",
  ],
  [
    'token',
    () => tokenIssueCommand.run(['alice', '--ttl', '0h'], config),
    '--ttl: "0h" is not a duration; see bun run cli token issue --help',
  ],
  [
    'token',
    () => tokenIssueCommand.run(['--ttl', '1h'], config),
    'token issue needs a subject of 1 to 255 characters',
  ],
  [
    'erase',
    () => ownersEraseCommand.run(['-dash'], config),
    `unknown option '-d' (in "-dash"); an argument that starts with "-" goes after "--", as in: -- -dash; see bun run cli owners erase --help`,
  ],
])('%s refuses bad arguments in one line, saying why and where its help is', async (_name, run, message) => {
  const refused = await run().then(
    () => undefined,
    (error: unknown) => error,
  )
  expect(refused).toMatchObject({ code: 'BAD_USAGE' })
  expect((refused as Error).message).toContain(message)
  expect((refused as Error).message).not.toContain('\n')
})
