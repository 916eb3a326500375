import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { denoServerCommand } from '../support/deno.ts'
import { runCli, runServerToExit, SERVER_COMMAND } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'

// What a start says about itself: the variables it ignores, what it runs on, and why it cannot
// listen, each in one line.
let storage: ServiceStorage
let databaseName: string
let onPostgres: Record<string, string>
beforeAll(async () => {
  storage = await startService({ label: 'honest_start', instances: 0 })
  databaseName = String(storage.database?.name)
  onPostgres = storage.env
})
afterAll(() => storage?.stop())

type Line = { level: number; msg: string; variable?: string; nearest?: string; database?: string }

test('misspelt variables are warned about at start, one line each naming the known one, and it goes on', async () => {
  // given a PostgreSQL start with four variables the service does not read
  const server = await storage.startAnother({
    DATABSE_URL: 'postgres://nobody@127.0.0.1:1/elsewhere',
    database_url: 'postgres://nobody@127.0.0.1:1/elsewhere',
    EVENT_NATS_URL: 'nats://127.0.0.1:4222',
    LOG_LEVELS: 'debug',
  })
  try {
    // when it has started
    const lines = server.startLines.map((line) => JSON.parse(line) as Line)
    // then each is one warning naming the nearest known name, before the line saying what runs
    expect(
      lines.filter(({ level }) => level === 40).map(({ variable, nearest }) => [variable, nearest]),
    ).toEqual([
      ['DATABSE_URL', 'DATABASE_URL'],
      ['EVENT_NATS_URL', 'EVENTS_NATS_URL'],
      ['LOG_LEVELS', 'LOG_LEVEL'],
      ['database_url', 'DATABASE_URL'],
    ])
    const listening = lines.at(-1)
    expect(listening?.msg).toBe(
      `plant store listening on 127.0.0.1:${new URL(server.url).port}: PostgreSQL 127.0.0.1:5432/${databaseName}, feed off`,
    )
    expect((await fetch(`${server.url}/health`)).status).toBe(200)
  } finally {
    await server.stop()
  }
}, 60_000)

test("the start's line names the database without the password", async () => {
  const withPassword = new URL(String(storage.databaseUrl))
  withPassword.password = 'not-the-password-but-secret'
  const server = await storage.startAnother({ DATABASE_URL: withPassword.toString() })
  try {
    expect(server.startLines.join('\n')).not.toContain('not-the-password-but-secret')
    expect((JSON.parse(server.startLines.at(-1) ?? '{}') as Line).database).toBe(
      `127.0.0.1:5432/${databaseName}`,
    )
  } finally {
    await server.stop()
  }
}, 60_000)

test('given PostgreSQL with neither token secret nor key-encryption key and two bad values, when the server starts, then one start names all four, one line each, and exits 2 as the CLI does', async () => {
  // given (an empty KEY_ENCRYPTION_KEYS is unset: the test support's default KEK is then not added)
  const { AUTH_JWT_SECRET: _, ...withoutSecret } = onPostgres
  const env = { ...withoutSecret, KEY_ENCRYPTION_KEYS: '', PORT: 'abc', LOG_LEVEL: 'loud' }
  // when
  const server = await runServerToExit(env)
  const command = await runCli(['projection', 'verify'], env)
  // then
  const lines = server.stderr.trim().split('\n')
  expect(lines).toHaveLength(4)
  for (const line of lines) expect(line).toStartWith('plant store cannot start: ')
  for (const variable of ['PORT', 'LOG_LEVEL', 'AUTH_JWT_SECRET', 'KEY_ENCRYPTION_KEYS'])
    expect(lines.filter((line) => line.includes(variable))).toEqual([expect.any(String)])
  expect(server.exitCode).toBe(2)
  // and the CLI names the bad values alike, with the same exit code
  expect(command.exitCode).toBe(2)
  expect(command.stderr.trim().split('\n')).toEqual([
    expect.stringContaining('PORT must be'),
    expect.stringContaining('LOG_LEVEL must be'),
  ])
}, 60_000)

describe.each([
  ['Bun', SERVER_COMMAND],
  ['Deno', denoServerCommand()],
])('under %s', (_runtime, command) => {
  test('a PORT in use stops the start in one line naming it, without a stack', async () => {
    // given a port another process listens on
    const holder = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      // when the server is started on it
      const { stderr, exitCode } = await runServerToExit(
        { ...onPostgres, PORT: String(holder.port) },
        command,
      )
      // then
      expect({ exitCode, stderr }).toEqual({
        exitCode: 2,
        stderr: `plant store cannot start: PORT ${holder.port} is in use on HOST 127.0.0.1: stop what listens there, or set another PORT (0 picks a free one)\n`,
      })
    } finally {
      holder.stop(true)
    }
  }, 60_000)

  test('a HOST that is no address stops the start in one line naming it, without a stack', async () => {
    const { stderr, exitCode } = await runServerToExit({ ...onPostgres, HOST: '999.1.1.1' }, command)
    expect(exitCode).toBe(2)
    expect(stderr).toStartWith('plant store cannot start: HOST 999.1.1.1 cannot be listened on (')
    expect(stderr).toEndWith('): set HOST to an address of this machine, or 0.0.0.0 for all\n')
    expect(stderr.split('\n').length).toBe(2)
  }, 60_000)
})
