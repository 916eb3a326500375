import { afterAll, beforeAll, expect, test } from 'bun:test'
import { withoutProgress } from '../support/cli-assertions.ts'
import { postPlant, tokenHeader } from '../support/plant-client.ts'
import { runCli, type ServerProcess } from '../support/server-process.ts'
import { type Service, type ServiceStorage, startService } from '../support/service.ts'

// The commands that touch a store, on PostgreSQL: only the server and `token issue` need a token
// secret, and `--` lets any owner be named.
const OWNERS = ['--help', '-h', '-x', 'alice']

let service: Service
let targetStorage: ServiceStorage
let sourceUrl: string
let targetUrl: string
let server: ServerProcess
beforeAll(async () => {
  service = await startService({ label: 'cli_source' })
  targetStorage = await startService({ label: 'cli_target', instances: 0 })
  sourceUrl = String(service.databaseUrl)
  targetUrl = String(targetStorage.databaseUrl)
  server = service.server
  for (const [index, owner] of OWNERS.entries()) {
    const created = await postPlant(server.url, await tokenFor(owner), {
      id: index,
      name: `plant of ${owner}`,
    })
    expect(created.status).toBe(200)
  }
}, 60_000)
afterAll(async () => {
  await server?.stop()
  await service?.stop()
  await targetStorage?.stop()
})

function tokenFor(subject: string): Promise<string> {
  return service.tokenFor(subject, 600)
}

async function listing(owner: string): Promise<unknown> {
  const response = await fetch(`${server.url}/plants`, {
    headers: tokenHeader(await tokenFor(owner)),
  })
  return response.json()
}

test('export, import and verify with DATABASE_URL alone: no token secret is asked for', async () => {
  // given the source and an empty target, named by DATABASE_URL and nothing else
  // when
  const exported = await runCli(['events', 'export'], { DATABASE_URL: sourceUrl })
  const imported = await runCli(['events', 'import'], { DATABASE_URL: targetUrl }, exported.stdout)
  const verified = await runCli(['projection', 'verify'], { DATABASE_URL: targetUrl })
  // then
  expect({ exitCode: exported.exitCode, stderr: exported.stderr }).toMatchObject({ exitCode: 0 })
  expect({ exitCode: imported.exitCode, stderr: withoutProgress(imported.stderr) }).toEqual({
    exitCode: 0,
    stderr: `imported ${OWNERS.length} events, each with its plant\n`,
  })
  expect({ exitCode: verified.exitCode, stdout: verified.stdout }).toEqual({
    exitCode: 0,
    stdout: `the projection matches the fold of the log (${OWNERS.length} events)\n`,
  })
}, 60_000)

test('token issue with DATABASE_URL and no secret is refused, naming what to set', async () => {
  const refused = await runCli(['token', 'issue', 'alice'], { DATABASE_URL: sourceUrl })
  expect(refused.exitCode).toBe(2)
  expect(refused.stdout).toBe('')
  expect(refused.stderr).toContain('AUTH_JWT_SECRET')
})

test('owners erase -- --help erases the owner "--help", and -- -h, -- -x theirs; alice keeps hers', async () => {
  // given four owners with a plant each
  // when the three that look like options are erased after --
  const erased = []
  for (const owner of ['--help', '-h', '-x'])
    erased.push(await runCli(['owners', 'erase', '--', owner], { DATABASE_URL: sourceUrl }))
  // then each printed the one plant it had, and only alice lists hers
  expect(erased.map(({ exitCode, stdout }) => ({ exitCode, stdout }))).toEqual([
    { exitCode: 0, stdout: '1\n' },
    { exitCode: 0, stdout: '1\n' },
    { exitCode: 0, stdout: '1\n' },
  ])
  for (const owner of ['--help', '-h', '-x']) expect(await listing(owner)).toEqual([])
  expect(await listing('alice')).toEqual([{ name: 'plant of alice' }])
}, 60_000)

test('a misspelt variable is warned about on stderr, naming the known one, and the command goes on', async () => {
  const status = await runCli(['projection', 'status'], {
    DATABASE_URL: sourceUrl,
    DATABASE_POOL_SIZ: '3',
    events_nats_url: 'nats://127.0.0.1:4222',
  })
  expect(status.exitCode).toBe(0)
  expect(status.stdout).toStartWith('projection plants:')
  expect(status.stderr.split('\n')).toEqual([
    'DATABASE_POOL_SIZ is not a setting of this service and is ignored; did you mean DATABASE_POOL_SIZE?',
    'events_nats_url is not a setting of this service and is ignored; did you mean EVENTS_NATS_URL?',
    '',
  ])
})
