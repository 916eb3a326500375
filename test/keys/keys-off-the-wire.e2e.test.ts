import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import postgres from 'postgres'
import { unwrapOwnerKey } from '../../src/crypto/envelope.ts'
import { type KeyEncryptionKeys, parseKeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'
import { expectCliSucceeded } from '../support/cli-assertions.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { type Env, runCli, startServer } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { changesRequest, openSse, plantOf } from '../support/sse-client.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'
import { TEST_KEY_ENCRYPTION_KEYS } from '../support/test-keys.ts'
import { EARLIER_STORES, restoreEarlierPostgres } from './fixtures/earlier-stores.ts'

// Every byte the service and the CLI send to PostgreSQL, recorded by a proxy in between while they
// do all they do with keys, holds no key-encryption key and no owner's key in any usual spelling.

const NEW_KEK = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
const KEYS = `${NEW_KEK},${TEST_KEY_ENCRYPTION_KEYS}`

let storage: ServiceStorage
let target: TestDatabase
let proxy: TcpProxy
beforeAll(async () => {
  proxy = startTcpProxy({ hostname: '127.0.0.1', port: 5432 }, { record: true })
  storage = await startService({ label: 'keys_wire', instances: 0, feed: true, databaseUrl: throughProxy })
  restoreEarlierPostgres(String(storage.databaseUrl))
  target = await createTestDatabase('keys_wire_import')
})
afterAll(async () => {
  await storage?.stop()
  await target?.drop()
  proxy?.stop()
})

function throughProxy(url: string): string {
  const proxied = new URL(url)
  proxied.port = String(proxy.port)
  return proxied.toString()
}

const keks = (text: string): KeyEncryptionKeys => {
  const parsed = parseKeyEncryptionKeys(text)
  if (typeof parsed === 'string') throw new Error(parsed)
  return parsed
}

// Every owner's key the database holds now, unwrapped here (read directly, not through the proxy).
async function ownerKeys(url: string): Promise<Uint8Array[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<{ pseudonym: string; key: Uint8Array }[]>`select pseudonym, key from owner_keys`
    return rows.map(({ pseudonym, key }) => {
      const raw = unwrapOwnerKey(new Uint8Array(key), keks(KEYS), pseudonym)
      if ('missing' in raw) throw new Error(`a key under an unknown key-encryption key ${raw.missing}`)
      return raw
    })
  } finally {
    await sql.end()
  }
}

function spellings(secret: Uint8Array): Buffer[] {
  const bytes = Buffer.from(secret)
  const base64 = bytes.toString('base64')
  return [
    bytes,
    Buffer.from(base64),
    Buffer.from(base64.replace(/=+$/, '')),
    Buffer.from(bytes.toString('base64url')),
    Buffer.from(bytes.toString('hex')),
    Buffer.from(bytes.toString('hex').toUpperCase()),
  ]
}

test('given an earlier store and a feed, when the service and the CLI create, list, stream, publish, rebuild, verify, export, import, rotate and erase, then no key-encryption key and no owner key crosses the wire to PostgreSQL', async () => {
  // given: the earlier store, served through the recording proxy
  const env: Env = { ...storage.env, KEY_ENCRYPTION_KEYS: TEST_KEY_ENCRYPTION_KEYS }
  const server = await startServer(env)
  const seen: Uint8Array[] = []
  const remember = async () => {
    seen.push(...(await ownerKeys(String(storage.databaseUrl))), ...(await ownerKeys(target.url)))
  }
  try {
    const [old] = EARLIER_STORES.owners
    if (!old) throw new Error('the earlier store has no owner')
    const oldToken = await storage.tokenFor(old.sub)
    const newToken = await storage.tokenFor('nadia')
    // when: a stream is open, new and old owners create, list, and the feed publishes
    const stream = await openSse(changesRequest(server.url, oldToken))
    expect((await postPlant(server.url, oldToken, { id: 100, name: 'after the change' })).status).toBe(200)
    expect((await postPlant(server.url, newToken, { id: 1, name: 'first of a new owner' })).status).toBe(200)
    expect((await stream.take(1, 10_000)).map(plantOf)).toEqual([{ id: '100', name: 'after the change' }])
    await stream.close()
    expect(await listEveryPlant(server.url, oldToken)).toHaveLength(old.plants.length + 1)
    expect(await listEveryPlant(server.url, newToken)).toEqual([{ name: 'first of a new owner' }])
    // every event of the earlier store's live owners and the two new ones; a stream made after an
    // erasure holds nothing of the erased owner, not even the notice
    const published = EARLIER_STORES.owners.flatMap((owner) => owner.plants).length + 2
    await storage.feed?.waitFor(published, 30_000)
    await server.stop()
    // the CLI: rebuild, verify, export, import into another store, rotate, erase
    const cli = async (args: string[], more: Env = {}, stdin?: string) => {
      const run = await runCli(args, { ...env, ...more }, stdin)
      expectCliSucceeded(args, run)
      return run.stdout
    }
    await cli(['projection', 'rebuild'])
    await cli(['projection', 'verify'])
    const exported = await cli(['events', 'export'])
    const elsewhere = {
      AUTH_JWT_SECRET: String(storage.secret),
      DATABASE_URL: throughProxy(target.url),
      KEY_ENCRYPTION_KEYS: TEST_KEY_ENCRYPTION_KEYS,
    }
    await cli(['events', 'import'], elsewhere, exported)
    await cli(['projection', 'verify'], elsewhere)
    await remember()
    await cli(['keys', 'rotate'], { KEY_ENCRYPTION_KEYS: KEYS })
    await remember()
    await cli(['owners', 'erase', '--', old.sub], { KEY_ENCRYPTION_KEYS: KEYS })
  } finally {
    await server.stop()
  }
  await remember()
  // then: nothing recorded holds a key, in any spelling
  const sent = proxy.sent()
  expect(sent.length).toBeGreaterThan(3)
  const secrets = [...keks(KEYS), ...seen]
  expect(seen.length).toBeGreaterThan(EARLIER_STORES.owners.length)
  const found = secrets.flatMap((secret, index) =>
    spellings(secret).flatMap((spelling, form) =>
      sent.some((bytes) => Buffer.from(bytes).includes(spelling)) ? [`secret ${index} in form ${form}`] : [],
    ),
  )
  expect(found).toEqual([])
})

test('given the earlier store once the new version has run on it, then no function of the store takes a key, no setting holds one and pgcrypto is gone', async () => {
  const sql = postgres(String(storage.databaseUrl), { max: 1, onnotice: () => {} })
  try {
    const takingKeys = await sql<{ name: string }[]>`
      select p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'
        and ('bytea'::regtype = any (p.proargtypes::oid[])
          or exists (select from unnest(coalesce(p.proargnames, '{}')) as arg where arg ~* 'key|kek'))`
    const pgcrypto = await sql`select extname from pg_extension where extname = 'pgcrypto'`
    const stored = await sql`select setting from pg_db_role_setting, unnest(setconfig) as setting
      where setting like 'plant_store.%'`
    const session = await sql`select name from pg_settings where name like 'plant_store.%'`
    expect({
      takingKeys: takingKeys.map((row) => row.name),
      pgcrypto: [...pgcrypto],
      stored: [...stored],
      session: [...session],
    }).toEqual({
      takingKeys: [],
      pgcrypto: [],
      stored: [],
      session: [],
    })
  } finally {
    await sql.end()
  }
})
