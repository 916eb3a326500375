import { expect, test } from 'bun:test'
import { parseArguments } from '../../src/cli/arguments.ts'
import { exportCommand, importCommand } from '../../src/cli/events-command.ts'
import { rebuildCommand, statusCommand } from '../../src/cli/projection-command.ts'
import { issueTokenCommand } from '../../src/cli/token-command.ts'
import { loadConfig } from '../../src/config.ts'

const TTL = { ttl: { type: 'string', default: '24h' } } as const

test('options and positionals parse in any order, with defaults and the --name=value form', () => {
  expect(parseArguments(['--ttl', '1h', 'alice'], 'u', TTL, 1)).toEqual({
    values: { ttl: '1h' },
    positionals: ['alice'],
  })
  expect(parseArguments(['alice', '--ttl=2d'], 'u', TTL, 1).values.ttl).toBe('2d')
  expect(parseArguments(['alice'], 'u', TTL, 1).values.ttl).toBe('24h')
})

test('an unknown option, a missing value or an extra positional is a usage error naming it and the usage', () => {
  for (const [args, named] of [
    [['alice', '--nope'], "'--nope'"],
    [['alice', '--ttl'], "'--ttl"],
    [['alice', 'bob'], '"bob"'],
    [['-t', '1h'], "'-t'"],
  ] as const) {
    let thrown: unknown
    try {
      parseArguments([...args], 'token issue <subject>', TTL, 1)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toMatchObject({ code: 'BAD_USAGE' })
    const [first, second] = (thrown as Error).message.split('\n')
    expect(first).toContain(named)
    expect(second).toBe('usage: token issue <subject>')
  }
})

// Each command refuses bad arguments before it opens any storage: a config that could not be
// opened shows that nothing was reached.
const config = loadConfig({ DATA_DIR: '/nonexistent/plant-store-cli-test' })

test.each([
  ['rebuild', () => rebuildCommand(['--dry-run', 'now'], config), 'usage: projection rebuild [--dry-run]'],
  ['status', () => statusCommand(['--verbose'], config), 'usage: projection status'],
  ['export', () => exportCommand(['--after', '-1'], config), "'--after' argument is ambiguous"],
  ['export', () => exportCommand(['--after', '01'], config), '--after: "01" is not a position'],
  [
    'import',
    () => importCommand(['--append=yes'], config),
    'usage: events import [--append] < events.ndjson',
  ],
  ['token', () => issueTokenCommand(['alice', '--ttl', '0h'], config), '--ttl: "0h" is not a duration'],
  [
    'token',
    () => issueTokenCommand(['--ttl', '1h'], config),
    'token issue needs a subject of 1 to 255 characters',
  ],
])('%s refuses bad arguments, saying why', async (_name, run, message) => {
  const refusal = await run().then(
    () => undefined,
    (error: unknown) => error,
  )
  expect(refusal).toMatchObject({ code: 'BAD_USAGE' })
  expect((refusal as Error).message).toContain(message)
})
