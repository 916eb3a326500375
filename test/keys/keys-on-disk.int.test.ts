import { afterAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import { seal, streamIdOf } from '../../src/crypto/sealing.ts'
import { openDataDir } from '../../src/data-dir/data-dir.ts'
import { rowsOf } from '../../src/database/database.ts'
import { postgresClient } from '../../src/database/postgres-client.ts'
import { openDataDirServer } from '../../src/embedded/data-dir-server.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { seedSealed } from '../support/sealed-seed.ts'
import { create, type KeyedStore, listing, openTestStorage } from '../support/storage.ts'

// An owner's key never reaches the disk unwrapped: the embedded store's whole DATA_DIR (tables,
// WAL, everything) is searched for the raw bytes, read through SQL with the key-encryption key.

const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true, recursive: true })
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name))
}

// The files under `folder` holding any of `needles`.
async function filesHolding(folder: string, needles: Buffer[]): Promise<string[]> {
  const holding: string[] = []
  for (const file of await filesUnder(folder)) {
    const bytes = await readFile(file).catch(() => undefined)
    if (bytes && needles.some((needle) => bytes.includes(needle))) holding.push(file)
  }
  return holding
}

// Each stored key, wrapped as the table holds it and unwrapped by the service.
async function keysOf({ db, keyring }: KeyedStore): Promise<{ raw: Buffer[]; wrapped: Buffer[] }> {
  const rows = rowsOf<{ pseudonym: string; wrapped: string }>(
    await db.execute(sql`select pseudonym, encode(key, 'hex') as wrapped from owner_keys`),
  )
  const wrapped = rows.map((row) => Buffer.from(row.wrapped, 'hex'))
  return {
    raw: rows.map((row, index) =>
      Buffer.from(keyring.open({ pseudonym: row.pseudonym, wrapped: wrapped[index] ?? Buffer.alloc(0) })),
    ),
    wrapped,
  }
}

// 303 owners, each with a key: three through the create path, 300 seeded.
async function createOwners(store: KeyedStore & { url?: string }): Promise<void> {
  for (const owner of ['alice', 'bob', 'carol']) await create(store, owner, { id: 1n, name: `${owner}'s` })
  const client = postgresClient(store.url ?? '', { max: 2, onnotice: () => {} })
  try {
    await seedSealed(
      client,
      store.keyring,
      "select 'o' || i as owner, i::bigint as id, 'n' as name, null::text as tag from generate_series(1, 300) as i",
      { project: true },
    )
  } finally {
    await client.end()
  }
}

test('given owners on the embedded store, when everything is checkpointed, then no file of DATA_DIR or its WAL holds a raw key', async () => {
  // given
  const dataDir = await makeDataDir('keys-on-disk-')
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }))
  const storage = await openStorage({ kind: 'embedded', dataDir })
  try {
    await createOwners({ ...storage, url: storage.settings.url })
    // when
    await storage.db.execute(sql`checkpoint`)
    await storage.db.execute(sql`select pg_switch_wal()`)
    const { raw, wrapped } = await keysOf(storage)
    expect(raw.length).toBe(303)
    expect(raw.every((key) => key.length === 32)).toBe(true)
    // then: the wrapped form is there (the search finds what is on disk), the raw one nowhere
    expect((await filesHolding(dataDir, wrapped.slice(0, 3))).length).toBeGreaterThan(0)
    expect(await filesHolding(dataDir, raw)).toEqual([])
    expect(await listing(storage.db, 'alice')).toEqual([{ name: "alice's" }])
  } finally {
    await storage.close()
  }
}, 120_000)

test("given owners on the machine's PostgreSQL, when everything is checkpointed, then neither the database's files nor the WAL hold a raw key", async () => {
  // given (the test runs as root, beside the server, and reads its data directory)
  const storage = await openTestStorage('postgres')
  // The WAL written from here on is kept while this connection lives: a temporary slot holds it, so
  // the checkpoints and writes of the tests beside this one cannot recycle and overwrite it first.
  const walKeeper = postgresClient(storage.url ?? '', { max: 1, onnotice: () => {} })
  try {
    await walKeeper`select pg_create_physical_replication_slot(${`keys_on_disk_${process.pid}`}, true, true)`
    await createOwners({ ...storage, url: storage.url })
    // when
    await storage.db.execute(sql`checkpoint`)
    const [where] = rowsOf<{ dir: string; oid: string }>(
      await storage.db.execute(sql`select current_setting('data_directory') as dir,
        (select oid::text from pg_database where datname = current_database()) as oid`),
    )
    const { raw, wrapped } = await keysOf(storage)
    expect(raw.length).toBe(303)
    const folders = [join(where?.dir ?? '', 'base', where?.oid ?? ''), join(where?.dir ?? '', 'pg_wal')]
    // then: the wrapped form is in the database's files, the raw one in none of them, nor in the WAL
    expect((await filesHolding(folders[0] ?? '', wrapped.slice(0, 3))).length).toBeGreaterThan(0)
    expect((await filesHolding(folders[1] ?? '', wrapped.slice(0, 3))).length).toBeGreaterThan(0)
    for (const folder of folders) expect(await filesHolding(folder, raw)).toEqual([])
  } finally {
    await walKeeper.end()
    await storage.close()
  }
}, 120_000)

// A store at migration 0007 (before key-encryption keys): raw keys, events sealed under them.
async function previousVersionStore(dataDir: string): Promise<void> {
  const folder = await mkdtemp(join(tmpdir(), 'migrations-0007-'))
  cleanups.push(() => rm(folder, { recursive: true, force: true }))
  const journal = JSON.parse(await readFile('db/migrations/meta/_journal.json', 'utf8')) as {
    entries: { idx: number; tag: string }[]
  }
  journal.entries = journal.entries.filter((entry) => entry.idx <= 7)
  await mkdir(join(folder, 'meta'))
  await writeFile(join(folder, 'meta', '_journal.json'), JSON.stringify(journal))
  for (const { tag } of journal.entries) await cp(`db/migrations/${tag}.sql`, join(folder, `${tag}.sql`))
  const server = await openDataDirServer(await openDataDir(dataDir))
  const client = postgresClient(server.url, { max: 1, onnotice: () => {} })
  try {
    const db = drizzlePostgres({ client })
    await migratePostgres(db, { migrationsFolder: folder })
    // as version 0007's append made them: a raw key per owner, its events sealed under it (in
    // today's form: what is at stake here is the keys)
    for (let i = 1; i <= 50; i++) {
      const raw = new Uint8Array(crypto.getRandomValues(new Uint8Array(32)))
      const pseudonym = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex')
      await db.execute(
        sql`insert into owner_keys (pseudonym, owner, key) values (${pseudonym}, ${`old-${i}`}, ${Buffer.from(raw)})`,
      )
      const place = { streamId: streamIdOf('1', raw), streamVersion: 1 }
      await db.execute(sql`
        insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
        values (${place.streamId}, 1, 'PlantCreated', 1,
                ${JSON.stringify(seal('{"id": "1", "name": "Old", "tag": null}', raw, 'data', place))}::jsonb,
                ${JSON.stringify({ pseudonym, ...seal('{"requestId": "r"}', raw, 'metadata', place) })}::jsonb, now())`)
    }
    await db.execute(
      sql`insert into plants (owner, id, name, tag, position) select 'old-' || i, 1, 'Old', null, i from generate_series(1, 50) as i`,
    )
  } finally {
    await client.end()
    await server.close()
  }
}

test('given a store whose keys an earlier version stored raw, when it first starts with a key-encryption key, then every key is wrapped and the raw bytes are gone from the table files', async () => {
  // given
  const dataDir = await makeDataDir('keys-upgrade-')
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }))
  await previousVersionStore(dataDir)
  const before = await openDataDirServer(await openDataDir(dataDir))
  const client = postgresClient(before.url, { max: 1, onnotice: () => {} })
  const rawRows = await client`select key, pg_relation_filepath('owner_keys') as file from owner_keys`
  await client.end()
  await before.close()
  const raw = rawRows.map((row) => Buffer.from(row.key as Uint8Array))
  expect(raw.length).toBe(50)
  expect((await filesHolding(dataDir, raw)).length).toBeGreaterThan(0)
  // when
  const progress: string[] = []
  const storage = await openStorage(
    { kind: 'embedded', dataDir },
    { onProgress: ({ step }) => progress.push(step) },
  )
  try {
    // then
    expect(progress.slice(0, 3)).toEqual(['wrap', 'vacuum keys', 'wrapped'])
    const [file] = rowsOf<{ file: string }>(
      await storage.db.execute(sql`select pg_relation_filepath('owner_keys') as file`),
    )
    const { raw: unwrapped, wrapped } = await keysOf(storage)
    expect(unwrapped.map((key) => key.toString('hex')).sort()).toEqual(
      raw.map((key) => key.toString('hex')).sort(),
    )
    expect(wrapped.every((key) => key.length === 64)).toBe(true)
    const tableFiles = (await filesUnder(dataDir)).filter((path) => path.includes(file?.file ?? '?'))
    expect(tableFiles.length).toBeGreaterThan(0)
    for (const path of tableFiles) {
      const bytes = await readFile(path)
      expect(raw.filter((key) => bytes.includes(key)).length).toBe(0)
    }
    expect(await listing(storage.db, 'old-7')).toEqual([{ name: 'Old' }])
    // an instance of the earlier version, still running, can no longer store a raw key
    const late = async () =>
      await storage.db.execute(
        sql`insert into owner_keys (pseudonym, owner, key) values ('x', 'late', gen_random_bytes(32))`,
      )
    await expect(late()).rejects.toThrow()
  } finally {
    await storage.close()
  }
}, 120_000)
