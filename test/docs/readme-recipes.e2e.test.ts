import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFile, rm, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import { keyEncryptionKeyId, parseKeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { postPlant } from '../support/plant-client.ts'
import { createTestDatabase, POSTGRES_ADMIN_URL, type TestDatabase } from '../support/postgres.ts'
import { printedLines, readmeBlock, runBlock, shownLines } from '../support/readme.ts'
import { runCli, startServer } from '../support/server-process.ts'

// The docs' recipes (docs/operating.md, Moving to PostgreSQL), read from the docs and run as
// written in a folder laid out as a clone is (its own ./data), against the test's PostgreSQL. Only
// the placeholders change: the docs' `user:pass@db-host:5432` and database `plants` become the
// test's server and a database of its own.
const ROOT = new URL('../..', import.meta.url).pathname
const admin = new URL(POSTGRES_ADMIN_URL)
const server = `${admin.username}@${admin.host}`

let checkout: string
const databases: TestDatabase[] = []
beforeAll(async () => {
  // As a clone would be: a folder the embedded server's user (postgres, under root) can enter.
  checkout = await makeDataDir('plant-store-readme-')
  for (const entry of ['package.json', 'bunfig.toml', 'tsconfig.json', 'src', 'db', 'node_modules'])
    await symlink(join(ROOT, entry), join(checkout, entry))
})
afterAll(async () => {
  await rm(checkout, { recursive: true, force: true })
  for (const database of databases) await database.drop()
})

const placeholders = (database: TestDatabase) => ({
  'user:pass@db-host:5432': server,
  plants: database.name,
})

test("Moving to PostgreSQL: a new deployment's recipe creates the database and serves from it", async () => {
  // given a database name of the test's own, which the recipe creates
  const name = `plant_store_readme_new_${Date.now().toString(36)}`
  const database: TestDatabase = {
    name,
    url: '',
    drop: async () => {
      const sql = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} })
      await sql.unsafe(`drop database if exists "${name}" with (force)`)
      await sql.end()
    },
  }
  databases.push(database)
  const block = await readmeBlock('Moving to PostgreSQL', 'createdb')
  // when it runs until the server listens
  const run = await runBlock(block, {
    cwd: checkout,
    env: {
      PGHOST: admin.hostname,
      PGPORT: admin.port || '5432',
      PGUSER: admin.username,
      HOST: '127.0.0.1',
      PORT: '0',
    },
    replace: placeholders(database),
    stopWhen: (output) => output.includes('plant store listening'),
  })
  // then it started on that database, said so, and had applied the migrations there
  expect(run.output).toContain(`PostgreSQL ${admin.host}/${name}, feed off`)
  const created = new URL(POSTGRES_ADMIN_URL)
  created.pathname = `/${name}`
  const sql = postgres(created.toString(), { max: 1, onnotice: () => {} })
  const [events] = await sql`select to_regclass('public.events') is not null as present`
  await sql.end()
  expect(events).toEqual({ present: true })
}, 120_000)

test('Moving to PostgreSQL: export from the embedded store, import and verify, as the docs show', async () => {
  // given the embedded default serving from the checkout's ./data, with two plants
  const target = await createTestDatabase('readme_move')
  databases.push(target)
  const embedded = await startServer({}, undefined, { cwd: checkout })
  const token = (
    await runCli(['token', 'issue', 'alice'], { DATA_DIR: join(checkout, 'data') })
  ).stdout.trim()
  for (const plant of [
    { id: 1, name: 'Monstera', tag: 'tropical' },
    { id: 2, name: 'Fern' },
  ])
    expect((await postPlant(embedded.url, token, plant)).status).toBe(200)
  const generated = await generatedKey(join(checkout, 'data'))
  const block = await readmeBlock('Moving to PostgreSQL', 'events export')
  // when the recipe runs as written
  const run = await runBlock(block, { cwd: checkout, replace: placeholders(target) })
  await embedded.process.exited
  // then each command succeeded and printed exactly what the docs show under it, the embedded
  // store's key named by its id
  const id = keyEncryptionKeyId(generated)
  const shownId = /key-encryption key ([0-9a-f]{8})/.exec(block)?.[1] ?? ''
  expect(printedLines(block).length).toBeGreaterThan(0)
  expect({ exitCode: run.exitCode, lines: shownLines(run.output, [[id, shownId]]) }).toEqual({
    exitCode: 0,
    lines: printedLines(block),
  })
}, 120_000)

// The key-encryption key the embedded default generated into `dataDir`.
async function generatedKey(dataDir: string): Promise<Uint8Array> {
  const keys = parseKeyEncryptionKeys(await readFile(join(dataDir, 'key-encryption-keys'), 'utf8'))
  if (typeof keys === 'string' || !keys[0]) throw new Error(`no generated key: ${keys}`)
  return keys[0]
}
