import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import { tokenHeader } from '../support/plant-client.ts'
import { type Env, runCli } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { TEST_KEY_ENCRYPTION_KEYS } from '../support/test-keys.ts'

// What a user moving off the embedded default does: export from DATA_DIR, import into PostgreSQL.
const BODIES: Record<string, string[]> = {
  alice: [
    '{"id": 9007199254740993, "name": "Ficus"}',
    '{"id": 9007199254740992, "name": "Ficus twin", "tag": null}',
    '{"id": 9223372036854775807, "name": "Max", "tag": ""}',
  ],
  'bob 🌵': ['{"id": -9223372036854775808, "name": "Kaktus 🌵 é 你好 \\ud83d\\ude00", "tag": "ת\\"ג\\\\"}'],
  carol: ['{"id": 1, "name": "\\u2028sep", "tag": "\\t"}', '{"id": 2, "name": "two"}'],
  // erased before the move (docs/erasure.md): erased they stay
  'dave.erased': ['{"id": 41, "name": "Dave fern", "tag": "dave-tag"}', '{"id": 42, "name": "Dave ivy"}'],
}

// The embedded store as the default makes it: no AUTH_JWT_SECRET, the server making its own.
let embeddedStore: ServiceStorage
let postgresStore: ServiceStorage
let embedded: Env
let postgresEnv: Env
beforeAll(async () => {
  embeddedStore = await startService({ storage: 'embedded', secret: null, label: 'move', instances: 0 })
  postgresStore = await startService({ label: 'move', instances: 0 })
  embedded = embeddedStore.env
  postgresEnv = postgresStore.env
})
afterAll(async () => {
  await embeddedStore?.stop()
  await postgresStore?.stop()
})

// Every owner's listing; then `afterwards` (with the server still up).
async function listings(
  store: ServiceStorage,
  afterwards: (url: string) => Promise<void> = async () => {},
): Promise<Record<string, string>> {
  const env = store.env
  const server = await store.startAnother()
  try {
    const found: Record<string, string> = {}
    for (const owner of Object.keys(BODIES)) {
      const token = (await runCli(['token', 'issue', owner], env)).stdout.trim()
      const response = await fetch(`${server.url}/plants`, { headers: tokenHeader(token) })
      found[owner] = await response.text()
    }
    await afterwards(server.url)
    return found
  } finally {
    await server.stop()
  }
}

// The erased sub creates again, an old id included: a new owner with no past.
async function createAnew(env: Env, url: string): Promise<string> {
  const token = (await runCli(['token', 'issue', 'dave.erased'], env)).stdout.trim()
  const headers = tokenHeader(token)
  const created = await fetch(`${url}/plants`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: '{"id": 41, "name": "Dave anew"}',
  })
  expect(created.status).toBe(200)
  return (await fetch(`${url}/plants`, { headers })).text()
}

test('embedded → export → import into PostgreSQL → the same listing for every owner, the erased one erased', async () => {
  // given: plants created through the embedded server
  const server = await embeddedStore.startAnother()
  for (const [owner, bodies] of Object.entries(BODIES)) {
    const token = (await runCli(['token', 'issue', owner], embedded)).stdout.trim()
    for (const body of bodies) {
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { ...tokenHeader(token), 'content-type': 'application/json' },
        body,
      })
      expect(response.status).toBe(200)
    }
  }
  await server.stop()
  const erased = await runCli(['owners', 'erase', 'dave.erased'], embedded)
  expect(erased).toMatchObject({ exitCode: 0, stdout: '2\n' })
  const before = await listings(embeddedStore)
  // when
  const exported = await runCli(['events', 'export'], embedded)
  const withoutItsKey = await runCli(['events', 'import'], postgresEnv, exported.stdout)
  const embeddedKey = (await readFile(join(embedded.DATA_DIR ?? '', 'key-encryption-keys'), 'utf8')).trim()
  const imported = await runCli(
    ['events', 'import'],
    { ...postgresEnv, KEY_ENCRYPTION_KEYS: `${TEST_KEY_ENCRYPTION_KEYS},${embeddedKey}` },
    exported.stdout,
  )
  // then: the header, 3 keys, 1 erased pseudonym, 8 plants and the erasure's notice
  expect(exported.exitCode).toBe(0)
  expect(exported.stderr).toContain('exported 9 events, with 3 owner key(s) and 1 erased owner(s)')
  const lines = exported.stdout.trim().split('\n')
  expect(lines.length).toBe(1 + 3 + 1 + 9)
  for (const trace of ['dave', 'Dave fern', 'Dave ivy', 'dave-tag'])
    expect(exported.stdout).not.toContain(trace)
  // the export holds the keys only wrapped: without the embedded store's key-encryption key, the
  // import is refused naming it; with it, each key is wrapped again under the new store's own
  expect(withoutItsKey.exitCode).toBe(1)
  expect(withoutItsKey.stderr).toMatch(/key-encryption key [0-9a-f]{8}, which KEY_ENCRYPTION_KEYS lacks/)
  expect(imported.exitCode).toBe(0)
  expect(imported.stderr).toContain('imported 9 events, each with its plant')
  let anew = ''
  expect(
    await listings(postgresStore, async (url) => {
      anew = await createAnew(postgresEnv, url)
    }),
  ).toEqual(before)
  expect(before.alice).toBe('[{"name":"Ficus"},{"name":"Ficus twin"},{"name":"Max","tag":""}]')
  expect(before['dave.erased']).toBe('[]')
  expect(anew).toBe('[{"name":"Dave anew"}]')
  // the log moved whole: the same events at the same positions, the pseudonym still erased
  const moved = (await runCli(['events', 'export'], postgresEnv)).stdout.trim().split('\n')
  expect(moved.filter((line) => line.startsWith('{"position":')).slice(0, 9)).toEqual(
    lines.filter((line) => line.startsWith('{"position":')),
  )
  expect(moved.filter((line) => line.startsWith('{"erased":'))).toEqual(
    lines.filter((line) => line.startsWith('{"erased":')),
  )
  expect((await runCli(['projection', 'verify'], postgresEnv)).exitCode).toBe(0)
  // and a second import into the now non-empty store is refused
  const again = await runCli(['events', 'import'], postgresEnv, exported.stdout)
  expect(again.exitCode).toBe(1)
  expect(again.stderr).toContain('not empty')
}, 120_000)

test('verify exits non-zero and names the drift; status shows the last rebuild against the head', async () => {
  // given
  const sql = postgres(String(postgresStore.databaseUrl), { max: 1, onnotice: () => {} })
  await sql`delete from plants where owner = 'carol' and id = 2`
  await sql.end()
  // when
  const verify = await runCli(['projection', 'verify'], postgresEnv)
  const dryRun = await runCli(['projection', 'rebuild', '--dry-run'], postgresEnv)
  const status = await runCli(['projection', 'status'], postgresEnv)
  // then
  expect(verify.exitCode).toBe(1)
  expect(verify.stdout).toContain('missing: 1 row(s)')
  expect(verify.stdout).toContain('owner="carol" id=2 name="two" tag=null')
  expect(dryRun.exitCode).toBe(1)
  expect(dryRun.stdout).toContain('nothing swapped')
  expect(status.stdout).toMatch(
    // the import projected its events itself: no rebuild yet, and the deleted row is behind
    /projection plants: never rebuilt; log head: position \d+ \(10 events\); 1 event\(s\) behind: run projection rebuild/,
  )
  expect((await runCli(['projection', 'rebuild'], postgresEnv)).exitCode).toBe(0)
  expect((await runCli(['projection', 'verify'], postgresEnv)).exitCode).toBe(0)
}, 120_000)
