import { describe, expect, test } from 'bun:test'
import { chmod, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { issueToken } from '../../src/auth/issue-token.ts'
import { readLocalSecret } from '../../src/auth/local-secret.ts'
import { ERASED_OWNER, FIXTURE_OWNERS, type FixturePlant } from '../embedded/fixtures/pglite-store-plants.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { leftAfterTests } from '../support/left-after-tests.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { runCli, runServerToExit, type ServerProcess, startServer } from '../support/server-process.ts'

// A DATA_DIR written by the previous engine (PGlite, its data in DATA_DIR/pgdata) is moved into
// the native server on the first start: exported and imported with the log's own tools, the old
// folder kept aside, nothing lost, text exact at the limits. The fixture was made by that
// version's own service and CLI (test/embedded/fixtures/README.md).
const FIXTURE = new URL('../embedded/fixtures/pglite-data-dir.tar.xz', import.meta.url).pathname
const EVENTS = Object.values(FIXTURE_OWNERS).flat().length + 2 + 1

const { servers, folders } = leftAfterTests()

// The fixture unpacked into a fresh folder: its DATA_DIR.
async function oldDataDir(): Promise<string> {
  const folder = await makeDataDir('plant-store-pglite-move-')
  folders.push(folder)
  const untar = Bun.spawnSync(['tar', '-xJf', FIXTURE, '-C', folder])
  if (untar.exitCode !== 0) throw new Error(untar.stderr.toString())
  return join(folder, 'data')
}

async function started(dataDir: string): Promise<ServerProcess> {
  const server = await startServer({ DATA_DIR: dataDir, LOG_FORMAT: 'json' })
  servers.push(server)
  return server
}

// What GET /plants answers for a plant as it was posted: no tag when it had none or null.
function listed({ name, tag }: FixturePlant): { name: string; tag?: string } {
  return tag === undefined || tag === null ? { name } : { name, tag }
}

// Each owner's listing, by the raw JSON text, so that every character is compared as sent.
async function listings(url: string, dataDir: string): Promise<Record<string, unknown>> {
  const secret = await readLocalSecret(dataDir)
  if (!secret) throw new Error('the fixture has no auth-secret')
  const found: Record<string, unknown> = {}
  for (const owner of [...Object.keys(FIXTURE_OWNERS), ERASED_OWNER]) {
    const token = await issueToken(secret, { subject: owner, ttlSeconds: 600, now: new Date() })
    const response = await fetch(`${url}/plants`, { headers: tokenHeader(token) })
    found[owner] = JSON.parse(await response.text())
  }
  return found
}

// Every owner's listing from a service started on `dataDir`, and stopped cleanly after.
async function listedAfterStart(dataDir: string): Promise<Record<string, unknown>> {
  const server = await started(dataDir)
  const listed = await listings(server.url, dataDir)
  expect(await server.stop('SIGTERM')).toBe(0)
  return listed
}

// The previous engine's folder, and the ones a move kept it in, found in DATA_DIR.
async function oldStoreFolders(dataDir: string): Promise<string[]> {
  return (await readdir(dataDir)).filter((name) => name.startsWith('pglite') || name === 'pgdata')
}

const EXPECTED = {
  ...Object.fromEntries(Object.entries(FIXTURE_OWNERS).map(([owner, plants]) => [owner, plants.map(listed)])),
  [ERASED_OWNER]: [],
}

describe('a DATA_DIR of the previous engine (PGlite)', () => {
  test('is moved on the first start: every plant listed exactly, the erased owner still erased, the old folder kept', async () => {
    // given the previous version's DATA_DIR
    const dataDir = await oldDataDir()
    // when this version starts on it
    const server = await started(dataDir)
    // then it says what it moved and where it kept the old folder
    const line = server.startLines.find((text) => text.includes('moved the store of the previous engine'))
    const { events, keptIn } = JSON.parse(line ?? '{}') as { events: number; keptIn: string }
    expect(events).toBe(EVENTS)
    expect(keptIn.startsWith(join(dataDir, 'pglite-'))).toBe(true)
    expect((await readdir(keptIn)).sort()).toEqual(['events.ndjson', 'pgdata'])
    expect((await readdir(dataDir)).includes('pgdata')).toBe(false)
    // and every owner lists their plants as they were sent, tokens of the kept secret included
    expect(await listings(server.url, dataDir)).toEqual(EXPECTED)
    // and the projection is the fold of the moved log, checked beside the running service
    const verify = await runCli(['projection', 'verify'], { DATA_DIR: dataDir })
    expect(verify.stdout).toContain(`matches the fold of the log (${EVENTS} events)`)
    // and a restart moves nothing again and lists the same
    expect(await server.stop('SIGTERM')).toBe(0)
    const again = await started(dataDir)
    expect(again.startLines.some((text) => text.includes('moved the store'))).toBe(false)
    expect(await listings(again.url, dataDir)).toEqual(EXPECTED)
    // and an export of the moved store, imported into another embedded store, lists the same
    const exported = await runCli(['events', 'export'], { DATA_DIR: dataDir })
    expect(await again.stop('SIGTERM')).toBe(0)
    const copy = join(await makeDataDir('plant-store-pglite-copy-'), 'data')
    folders.push(copy)
    await Bun.write(join(copy, 'auth-secret'), Bun.file(join(dataDir, 'auth-secret')))
    // the export's keys are wrapped under the moved store's key-encryption key: it goes along
    await Bun.write(join(copy, 'key-encryption-keys'), Bun.file(join(dataDir, 'key-encryption-keys')))
    // as secret files must be to be read: the service's user's alone
    for (const name of ['auth-secret', 'key-encryption-keys']) await chmod(join(copy, name), 0o600)
    const imported = await runCli(['events', 'import'], { DATA_DIR: copy }, exported.stdout)
    expect(imported.stderr).toContain(`imported ${EVENTS} events`)
    expect(await listedAfterStart(copy)).toEqual(EXPECTED)
  }, 120_000)

  test('another command than db migrate refuses it in one line, and the owner it would erase is still there', async () => {
    // given a DATA_DIR of the previous engine
    const dataDir = await oldDataDir()
    const [owner = ''] = Object.keys(FIXTURE_OWNERS)
    // when an owner of it is erased before it was moved
    const refused = await runCli(['owners', 'erase', owner], { DATA_DIR: dataDir })
    // then the command refuses in one line and the old folder stays where it was
    expect({ code: refused.exitCode, lines: refused.stderr.trim().split('\n') }).toEqual({
      code: 1,
      lines: [
        expect.stringContaining(
          `DATA_DIR ${dataDir} holds a store of the previous engine (PGlite) that is not moved yet: starting the service or \`bun run cli db migrate\` moves it`,
        ),
      ],
    })
    expect(await oldStoreFolders(dataDir)).toEqual(['pgdata'])
    // and the start moves it with every owner's plants
    expect(await listedAfterStart(dataDir)).toEqual(EXPECTED)
  }, 120_000)

  test('a start that cannot move it stops in one line, changes nothing, and the CLI moves it once the cause is gone', async () => {
    // given the old folder beside a store of this engine that already holds another event
    const dataDir = await oldDataDir()
    const oldFolder = join(dataDir, 'pgdata')
    await rename(oldFolder, `${oldFolder}.away`)
    const created = await runCli(['events', 'import'], { DATA_DIR: dataDir }, OTHER_EXPORT)
    expect(created.exitCode).toBe(0)
    await rename(`${oldFolder}.away`, oldFolder)
    // when the service starts, then it refuses in one line and leaves the old folder where it was
    const refused = await runServerToExit({ HOME: '/tmp', DATA_DIR: dataDir })
    expect(refused.exitCode).toBe(1)
    expect(refused.stderr.trim().split('\n')).toEqual([
      `plant store cannot start: DATA_DIR ${dataDir} holds a store of the previous engine (PGlite, in ${oldFolder}) that could not be moved, and nothing was changed: this engine's store already holds 1 events, the old one ${EVENTS}; \`bun run cli db migrate\` tries again`,
    ])
    expect(await oldStoreFolders(dataDir)).toEqual(['pgdata'])
    // and once this engine's store is gone (its server, stopped by the refused start's watchdog,
    // gone first), the CLI moves it
    while (await Bun.file(join(dataDir, 'postgres', 'postmaster.pid')).exists()) await Bun.sleep(20)
    await rm(join(dataDir, 'postgres'), { recursive: true, force: true })
    const migrated = await runCli(['db', 'migrate'], { DATA_DIR: dataDir })
    expect({ code: migrated.exitCode, err: migrated.stderr }).toEqual({
      code: 0,
      err: expect.stringContaining(
        `moved the store of the previous engine (PGlite) into PostgreSQL: ${EVENTS} events`,
      ),
    })
    expect(await listedAfterStart(dataDir)).toEqual(EXPECTED)
  }, 120_000)
})

// One plant of an owner of its own, as version 1 exports wrote them (plaintext; sealed on import).
const OTHER_EXPORT = `${JSON.stringify({
  position: '1',
  streamId: 'plant:1:someone-else',
  streamVersion: 1,
  type: 'PlantCreated',
  schemaVersion: 1,
  data: { id: '1', name: 'Other', tag: null },
  metadata: { owner: 'someone-else', requestId: 'r1' },
  recordedAt: '2026-01-01T00:00:00.000Z',
})}\n`
