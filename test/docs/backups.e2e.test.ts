import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFile, rm, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { keyEncryptionKeyId, parseKeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { printedLines, readmeBlock, runBlock, shownLines } from '../support/readme.ts'
import { runCli, startServer } from '../support/server-process.ts'

// The docs' Backups section (docs/operating.md), read from the docs and run as written: a backup
// of the embedded default taken in one clone, then restored on a new machine (another clone, with
// no ./data) from the export and the key-encryption key alone, into a new DATA_DIR and into a new
// database. Only the placeholders change: the docs' /backups and /vault become folders of the test.
const ROOT = new URL('../..', import.meta.url).pathname
const PLANTS = [
  { id: 1, name: 'Monstera', tag: 'tropical' },
  { id: 2, name: 'Fern' },
]

const folders: string[] = []
let database: TestDatabase | undefined
let placeholders: Record<string, string>
beforeAll(async () => {
  const [backups, vault] = [
    await makeDataDir('plant-store-backups-'),
    await makeDataDir('plant-store-vault-'),
  ]
  folders.push(backups, vault)
  placeholders = { '/backups': backups, '/vault': vault }
})
afterAll(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true })
  await database?.drop()
})

// A folder laid out as a clone is, with no ./data of its own: a machine of its own.
async function clone(): Promise<string> {
  const folder = await makeDataDir('plant-store-clone-')
  folders.push(folder)
  for (const entry of ['package.json', 'bunfig.toml', 'tsconfig.json', 'src', 'db', 'node_modules'])
    await symlink(join(ROOT, entry), join(folder, entry))
  return folder
}

// The block ran, and printed exactly the lines it shows, the key's id as the docs write it.
function expectRanAsShown(run: { exitCode: number; output: string }, block: string, id?: string): void {
  const shownId = /key-encryption key ([0-9a-f]{8})/.exec(block)?.[1] ?? ''
  expect(printedLines(block).length).toBeGreaterThan(0)
  expect({
    exitCode: run.exitCode,
    lines: shownLines(run.output, id === undefined ? [] : [[id, shownId]]),
  }).toEqual({ exitCode: 0, lines: printedLines(block) })
}

test("Backups: an export of the embedded default names its key-encryption key, and restores from the docs' steps into a new DATA_DIR and a new database", async () => {
  // given the embedded default serving from a clone's ./data, with an owner's two plants
  const first = await clone()
  const embedded = await startServer({}, undefined, { cwd: first })
  const token = (await runCli(['token', 'issue', 'alice'], { DATA_DIR: join(first, 'data') })).stdout.trim()
  for (const plant of PLANTS) expect((await postPlant(embedded.url, token, plant)).status).toBe(200)
  await embedded.stop()
  const generated = parseKeyEncryptionKeys(await readFile(join(first, 'data', 'key-encryption-keys'), 'utf8'))
  if (typeof generated === 'string' || !generated[0]) throw new Error(`no generated key: ${generated}`)
  const id = keyEncryptionKeyId(generated[0])

  // when the backup is taken as the docs show
  const backup = await readmeBlock('Backups', 'events export')
  const taken = await runBlock(backup, { cwd: first, replace: placeholders })
  // then it printed what the docs show, which says which key-encryption key it needs and where
  // it is kept
  expectRanAsShown(taken, backup, id)
  expect(taken.output).toContain(
    `its restore needs key-encryption key ${id}, kept in data/key-encryption-keys`,
  )

  // when it is restored as the docs show, on a machine with no DATA_DIR
  const restore = await readmeBlock('Backups', 'events import')
  const second = await clone()
  const intoDataDir = await runBlock(restore, { cwd: second, replace: placeholders })
  // then the new DATA_DIR serves the owner's plants, started as the docs say, with that KEK
  expectRanAsShown(intoDataDir, restore)
  const restored = await startServer(
    { KEY_ENCRYPTION_KEYS_FILE: join(String(placeholders['/vault']), 'plant-store.kek') },
    undefined,
    { cwd: second },
  )
  try {
    const again = (
      await runCli(['token', 'issue', 'alice'], { DATA_DIR: join(second, 'data') })
    ).stdout.trim()
    expect(await listEveryPlant(restored.url, again)).toEqual([
      { name: 'Monstera', tag: 'tropical' },
      { name: 'Fern' },
    ])
  } finally {
    await restored.stop()
  }

  // and when it is restored as the docs show into a new database
  database = await createTestDatabase('backups_restore')
  const intoDatabase = await runBlock(restore, {
    cwd: await clone(),
    env: { DATABASE_URL: database.url },
    replace: placeholders,
  })
  // then too
  expectRanAsShown(intoDatabase, restore)
}, 180_000)
