import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import postgres from 'postgres'
import { keyEncryptionKeyId } from '../../src/crypto/key-encryption-keys.ts'
import { postPlant, tokenHeader } from '../support/plant-client.ts'
import { POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { type Env, runCli, runServerToExit } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'

// KEY_ENCRYPTION_KEYS: required with PostgreSQL by what makes or opens keys, and by nothing else;
// a bad value stops in one line naming the variable; the key itself shows in no log line, no
// error, and no statement text that pg_stat_activity shows.

const KEK = Buffer.from(crypto.getRandomValues(new Uint8Array(32)))
const KEK_TEXT = KEK.toString('base64')

let storage: ServiceStorage
let databaseName: string
let base: Env
beforeAll(async () => {
  // An empty KEY_ENCRYPTION_KEYS is unset (the test support's default KEK is then not added).
  storage = await startService({ label: 'key_settings', instances: 0, env: { KEY_ENCRYPTION_KEYS: '' } })
  databaseName = String(storage.database?.name)
  base = storage.env
})
afterAll(() => storage?.stop())

const oneLine = (text: string) => text.trim().split('\n')

test('given DATABASE_URL without a key-encryption key, when the server or a command that opens keys starts, then it stops in one line naming the variable; token issue does not ask', async () => {
  // when
  const server = await runServerToExit(base)
  const verify = await runCli(['projection', 'verify'], base)
  const rotate = await runCli(['keys', 'rotate'], base)
  const token = await runCli(['token', 'issue', 'alice'], base)
  // then
  expect(server.exitCode).not.toBe(0)
  expect(oneLine(server.stderr)).toHaveLength(1)
  expect(server.stderr).toContain('KEY_ENCRYPTION_KEYS')
  for (const refused of [verify, rotate]) {
    expect(refused.exitCode).toBe(2)
    expect(oneLine(refused.stderr).filter((line) => !line.startsWith('$'))).toHaveLength(1)
    expect(refused.stderr).toContain('DATABASE_URL is set but KEY_ENCRYPTION_KEYS is not')
  }
  expect(token.exitCode).toBe(0)
})

test('given a bad key-encryption key, when the server starts, then it stops in one line naming the variable and not echoing the value', async () => {
  for (const bad of ['c2hvcnQ=', `${KEK_TEXT},not base64!`, `${KEK_TEXT}x`]) {
    const run = await runServerToExit({ ...base, KEY_ENCRYPTION_KEYS: bad })
    expect(run.exitCode).not.toBe(0)
    expect(oneLine(run.stderr)).toHaveLength(1)
    expect(run.stderr).toMatch(
      /KEY_ENCRYPTION_KEYS must be base64 keys of 32 bytes, comma-separated: entry [12] /,
    )
    expect(run.stderr).not.toContain(bad)
  }
  const missingFile = await runServerToExit({ ...base, KEY_ENCRYPTION_KEYS_FILE: '/nonexistent/keks' })
  expect(oneLine(missingFile.stderr)).toHaveLength(1)
  expect(missingFile.stderr).toContain('KEY_ENCRYPTION_KEYS_FILE')
})

test('given a server under load, then the key-encryption key is in no log line and no statement pg_stat_activity shows', async () => {
  // given
  const server = await storage.startAnother({ KEY_ENCRYPTION_KEYS: KEK_TEXT, LOG_LEVEL: 'trace' })
  const watcher = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} })
  const seen: string[] = []
  let watching = true
  const watch = (async () => {
    while (watching) {
      const rows =
        await watcher`select coalesce(query, '') as query from pg_stat_activity where datname = ${databaseName}`
      for (const row of rows) seen.push(String(row.query))
      await Bun.sleep(5)
    }
  })()
  try {
    const token = (await runCli(['token', 'issue', 'alice'], base)).stdout.trim()
    // when: creates, some of them failing (a conflict, a bad body), and reads
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        postPlant(server.url, token, { id: i % 150, name: `p${i % 150}` }),
      ),
    )
    await postPlant(server.url, token, { id: 1, name: 'another name' })
    await fetch(`${server.url}/plants?limit=5`, { headers: tokenHeader(token) })
  } finally {
    watching = false
    await watch
    await watcher.end()
    await server.stop()
  }
  // then
  expect(seen.length).toBeGreaterThan(10)
  const output = [...server.startLines, ...server.logLines()].join('\n')
  const hex = KEK.toString('hex')
  for (const text of [output, seen.join('\n')]) {
    expect(text).not.toContain(KEK_TEXT)
    expect(text).not.toContain(KEK_TEXT.slice(0, 20))
    expect(text).not.toContain(hex)
    expect(text).not.toContain('plant_store.keks')
  }
  // only its id may be said, e.g. by a start that lacks it
  expect(keyEncryptionKeyId(new Uint8Array(KEK))).toMatch(/^[0-9a-f]{8}$/)
}, 120_000)
