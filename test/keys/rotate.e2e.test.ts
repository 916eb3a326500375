import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import { unwrapOwnerKey } from '../../src/crypto/envelope.ts'
import { keyEncryptionKeyId, parseKeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'
import { openSealed } from '../../src/crypto/sealing.ts'
import { startEmbeddedDefault } from '../support/embedded-default.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { type Env, runCli, runServerToExit } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'

// `keys rotate` on PostgreSQL, beside a service that keeps creating: nothing lost, and once the
// old key-encryption key is dropped, a copy of owner_keys taken before an erasure (a backup, a
// replica, a dead row) opens nothing of the erased owner.

const OLD = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
const NEW = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')

let storage: ServiceStorage
let base: Env
beforeAll(async () => {
  storage = await startService({ label: 'keys_rotate', instances: 0 })
  base = storage.env
})
afterAll(() => storage?.stop())

const env = (keys: string) => ({ ...base, KEY_ENCRYPTION_KEYS: keys })

function keysOf(text: string) {
  const parsed = parseKeyEncryptionKeys(text)
  if (typeof parsed === 'string') throw new Error(parsed)
  return parsed
}

// How many of `owner`'s events the owner_keys rows in `table` open under the KEK list `keys`, read
// as anyone holding a copy of the table and those KEKs could read it.
async function openedWith(table: string, owner: string, keys: string): Promise<number | string> {
  const sql = postgres(String(storage.databaseUrl), { max: 1, onnotice: () => {} })
  try {
    const rows = await sql.unsafe<
      { pseudonym: string; key: Uint8Array; data: unknown; streamId: string; streamVersion: number }[]
    >(
      `select b.pseudonym, b.key, e.data, e.stream_id as "streamId", e.stream_version as "streamVersion" from events e join ${table} b on b.pseudonym = e.metadata->>'pseudonym'
       where b.owner = $1 and e.type = 'PlantCreated'`,
      [owner],
    )
    let opened = 0
    for (const row of rows) {
      const raw = unwrapOwnerKey(new Uint8Array(row.key), keysOf(keys), row.pseudonym)
      if ('missing' in raw) return `missing ${raw.missing}`
      if (openSealed(row.data, raw, 'data', row) !== undefined) opened++
    }
    return opened
  } finally {
    await sql.end()
  }
}

async function token(owner: string): Promise<string> {
  return (await runCli(['token', 'issue', owner], base)).stdout.trim()
}

test('given a backup of owner_keys from before an erasure, when keys rotate runs beside creates and the old key-encryption key is dropped, then the backup opens nothing of the erased owner and nothing created is lost', async () => {
  // given: alice and bob under the old key-encryption key
  const first = await storage.startAnother(env(OLD))
  const [alice, bob] = [await token('alice'), await token('bob')]
  for (const id of [1, 2]) {
    expect((await postPlant(first.url, alice, { id, name: `alice ${id}` })).status).toBe(200)
    expect((await postPlant(first.url, bob, { id, name: `bob ${id}` })).status).toBe(200)
  }
  await first.stop()
  // a "base backup" of the keys, taken before the erasure
  const admin = postgres(String(storage.databaseUrl), { max: 1, onnotice: () => {} })
  await admin`create table owner_keys_backup as select * from owner_keys`
  await admin.end()
  expect((await runCli(['owners', 'erase', 'alice'], env(OLD))).exitCode).toBe(0)
  // and the backup with the old key-encryption key does open alice's events (what is at stake)
  expect(await openedWith('owner_keys_backup', 'alice', OLD)).toBe(2)

  // when: the new key first on the service, creates running, keys rotate beside them
  const server = await storage.startAnother(env(`${NEW},${OLD}`))
  const writers = ['carol', 'dave', 'bob']
  const tokens = await Promise.all(writers.map(token))
  const acknowledged: { owner: string; name: string }[] = []
  let writing = true
  const write = async (owner: string, bearer: string) => {
    for (let id = 100; writing || id < 110; id++) {
      const name = `${owner} ${id}`
      const response = await postPlant(server.url, bearer, { id, name })
      if (response.status === 200) acknowledged.push({ owner, name })
    }
  }
  const running = writers.map((owner, index) => write(owner, tokens[index] ?? ''))
  await Bun.sleep(300)
  const rotated = await runCli(['keys', 'rotate'], env(`${NEW},${OLD}`))
  writing = false
  await Promise.all(running)
  await server.stop()

  // then: every key is under the new key-encryption key, the service starts without the old one,
  // and every acknowledged create is listed
  expect({ exitCode: rotated.exitCode, stderr: rotated.stderr }).toMatchObject({ exitCode: 0 })
  expect(Number(/\((\d+) re-wrapped/.exec(rotated.stdout)?.[1])).toBeGreaterThan(0)
  const after = await storage.startAnother(env(NEW))
  try {
    for (const [index, owner] of writers.entries()) {
      const listed = (await listEveryPlant(after.url, tokens[index] ?? '')).map((plant) => plant.name)
      const mine = acknowledged.filter((create) => create.owner === owner).map((create) => create.name)
      expect(mine.length).toBeGreaterThan(10)
      expect(mine.filter((name) => !listed.includes(name))).toEqual([])
    }
    expect(await listEveryPlant(after.url, bob)).toContainEqual({ name: 'bob 1' })
    expect(await listEveryPlant(after.url, alice)).toEqual([])
  } finally {
    await after.stop()
  }
  expect((await runCli(['projection', 'verify'], env(NEW))).exitCode).toBe(0)
  // and the backup, with the live log, opens nothing of alice once the old key is dropped
  expect(await openedWith('owner_keys_backup', 'alice', NEW)).toBe(
    `missing ${keyEncryptionKeyId(keysOf(OLD)[0] as Uint8Array)}`,
  )
  // and a start that still lacks the new key (the old one alone) stops in one line naming the variable
  const stale = await runServerToExit(env(OLD))
  expect(stale.exitCode).not.toBe(0)
  expect(stale.stderr.trim().split('\n')).toHaveLength(1)
  expect(stale.stderr).toContain('KEY_ENCRYPTION_KEYS lacks the key-encryption key')
  expect(stale.stderr).not.toContain(OLD)
}, 180_000)

// A server on the store, and plant 1 (`name`) created through it by `subject`, whose token it returns.
async function servePlant(store: ServiceStorage, subject: string, name: string) {
  const server = await store.startAnother()
  const owner = (await runCli(['token', 'issue', subject], store.env)).stdout.trim()
  expect((await postPlant(server.url, owner, { id: 1, name })).status).toBe(200)
  return { server, owner }
}

// What `owner` lists through a new server on the store (started with `env` added), stopped after.
async function listingOfNewServer(store: ServiceStorage, owner: string, env?: Env) {
  const again = await store.startAnother(env)
  try {
    return await listEveryPlant(again.url, owner)
  } finally {
    await again.stop()
  }
}

test('given the embedded default with its generated key-encryption key, when keys rotate runs with the service stopped, then the file holds a new key alone and every plant is still listed; beside a running service it refuses', async () => {
  // given
  const store = await startEmbeddedDefault('keys-rotate')
  const dataDir = String(store.dataDir)
  const embedded = store.env
  try {
    const { server, owner } = await servePlant(store, 'erin', 'Aloe')
    const beside = await runCli(['keys', 'rotate'], embedded)
    await server.stop()
    const before = await readFile(join(dataDir, 'key-encryption-keys'), 'utf8')
    // when
    const rotated = await runCli(['keys', 'rotate', '--yes'], embedded)
    // then
    expect(beside.exitCode).toBe(1)
    expect(beside.stderr).toContain('stop it, run keys rotate')
    expect(rotated.exitCode).toBe(0)
    expect(rotated.stdout).toContain("every owner's key is wrapped under key-encryption key")
    expect(rotated.stdout).toContain('(1 re-wrapped, 0 already were)')
    // and it named the old key it dropped, the exports it leaves unrestorable and how to keep them
    // restorable
    const old = keyEncryptionKeyId(keysOf(before)[0] as Uint8Array)
    const lines = rotated.stderr.split('\n')
    const warning = lines.findIndex((line) => line.includes(`events export named key-encryption key ${old})`))
    expect(warning).toBeGreaterThanOrEqual(0)
    expect(lines[warning]).toContain('keep such a copy outside DATA_DIR until those exports expire')
    expect(rotated.stdout).toContain(`dropped from DATA_DIR: ${old}`)
    const after = await readFile(join(dataDir, 'key-encryption-keys'), 'utf8')
    expect(after).not.toBe(before)
    expect(after.trim().split(',')).toHaveLength(1)
    expect(await listingOfNewServer(store, owner)).toEqual([{ name: 'Aloe' }])
  } finally {
    await store.stop()
  }
}, 120_000)

test("given the embedded store with its generated key-encryption key, when keys rotate runs with an operator's new key first, then DATA_DIR keeps no key nothing is wrapped under and the store starts with the new key alone", async () => {
  // given
  const store = await startEmbeddedDefault('keys-retire')
  const dataDir = String(store.dataDir)
  const embedded = store.env
  try {
    const { server, owner } = await servePlant(store, 'fay', 'Basil')
    await server.stop()
    const generated = (await readFile(join(dataDir, 'key-encryption-keys'), 'utf8')).trim()
    // when
    const rotated = await runCli(['keys', 'rotate', '--yes'], {
      ...embedded,
      KEY_ENCRYPTION_KEYS: `${NEW},${generated}`,
    })
    // then
    expect(rotated.exitCode).toBe(0)
    expect(rotated.stdout).toContain('(1 re-wrapped, 0 already were)')
    const retired = keyEncryptionKeyId(keysOf(generated)[0] as Uint8Array)
    expect(rotated.stdout).toContain(`dropped from DATA_DIR: ${retired}`)
    expect(rotated.stderr).toContain(`events export named key-encryption key ${retired})`)
    expect(await readFile(join(dataDir, 'key-encryption-keys'), 'utf8').catch(() => 'none')).toBe('none')
    expect(await listingOfNewServer(store, owner, { KEY_ENCRYPTION_KEYS: NEW })).toEqual([{ name: 'Basil' }])
  } finally {
    await store.stop()
  }
}, 120_000)
