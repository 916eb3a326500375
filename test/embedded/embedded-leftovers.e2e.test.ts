import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { issueToken } from '../../src/auth/issue-token.ts'
import { makeDataDir, otherUsersSecret } from '../support/data-dir.ts'
import { leftAfterTests } from '../support/left-after-tests.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import {
  runServerToExit,
  SERVER_COMMAND,
  type ServerProcess,
  startServer,
} from '../support/server-process.ts'

// What an earlier start leaves in DATA_DIR and that the service's own lock shows to be nobody's:
// a socket folder of another user (a start as root makes it the server's user's), and a
// postmaster.pid that names no process. Neither stops a start, or it stops in one line. The
// service runs here as the system's postgres user, as a non-root owner of DATA_DIR would.
const POSTGRES_UID = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())
const NOBODY_UID = Number(Bun.spawnSync(['id', '-u', 'nobody']).stdout.toString().trim())
const AS_OWNER = [
  'setpriv',
  `--reuid=${POSTGRES_UID}`,
  '--regid=postgres',
  '--init-groups',
  ...SERVER_COMMAND,
]

const { servers, folders } = leftAfterTests()

// A DATA_DIR of the owner's that has served one plant, and a token for it.
async function servedDataDir(): Promise<{ folder: string; token: string }> {
  const folder = await makeDataDir('plant-store-leftovers-')
  folders.push(folder)
  await chown(folder, POSTGRES_UID, POSTGRES_UID)
  const server = await startAsOwner(folder)
  const token = await issueToken(await otherUsersSecret(folder), {
    subject: 'owner',
    ttlSeconds: 600,
    now: new Date(),
  })
  expect((await postPlant(server.url, token, { id: 1, name: 'Kept' })).status).toBe(200)
  expect(await server.stop('SIGTERM')).toBe(0)
  return { folder, token }
}

async function startAsOwner(folder: string): Promise<ServerProcess> {
  const server = await startServer({ DATA_DIR: folder, HOME: folder }, AS_OWNER)
  servers.push(server)
  return server
}

describe("a socket folder of another user's", () => {
  test.each([
    ['empty', []],
    ['holding a dead server socket lock', ['.s.PGSQL.5432.lock']],
  ])(
    '%s does not stop the owner’s next start, which serves',
    async (_case, files) => {
      // given a socket folder left as a start as root leaves it: another user's, mode 0700
      const { folder, token } = await servedDataDir()
      const socket = join(folder, 'socket')
      await rm(socket, { recursive: true, force: true })
      await mkdir(socket, { mode: 0o700 })
      for (const file of files) await writeFile(join(socket, file), '999999\n')
      for (const file of ['', ...files]) await chown(join(socket, file), NOBODY_UID, NOBODY_UID)
      await chmod(socket, 0o700)
      // when the owner starts the service, then it serves what it kept
      const server = await startAsOwner(folder)
      expect(await listEveryPlant(server.url, token)).toEqual([{ name: 'Kept' }])
      // from a socket folder of its own, gone once it stops when it was a temporary one
      const pidFile = await readFile(join(folder, 'postgres', 'postmaster.pid'), 'utf8')
      const socketFolder = pidFile.split('\n')[4] ?? ''
      expect((await stat(socketFolder)).uid).toBe(POSTGRES_UID)
      expect(await server.stop('SIGTERM')).toBe(0)
      if (socketFolder !== socket) expect(existsSync(socketFolder)).toBe(false)
    },
    60_000,
  )
})

describe('a postmaster.pid that names no process', () => {
  test.each([
    ['empty', ''],
    ['garbage', 'not a pid\n'],
    ['a number cut short', '12'],
  ])(
    '%s does not stop the next start, which serves',
    async (_case, text) => {
      // given a stopped store whose PostgreSQL pid file was left broken
      const { folder, token } = await servedDataDir()
      await writeFile(join(folder, 'postgres', 'postmaster.pid'), text)
      // when the owner starts the service, then it serves what it kept
      const server = await startAsOwner(folder)
      expect(await listEveryPlant(server.url, token)).toEqual([{ name: 'Kept' }])
      expect(await server.stop('SIGTERM')).toBe(0)
    },
    60_000,
  )

  test('while another service holds DATA_DIR, a second start is refused in one line and removes nothing', async () => {
    // given a serving service
    const { folder, token } = await servedDataDir()
    const first = await startAsOwner(folder)
    // when a second start is tried on the same DATA_DIR
    const second = await runServerToExit({ DATA_DIR: folder, HOME: folder }, AS_OWNER)
    // then it is refused in one line, and the first serves on
    expect(second.exitCode).toBe(1)
    expect(second.stderr.trim().split('\n')).toHaveLength(1)
    expect(second.stderr).toContain('in use')
    expect(await listEveryPlant(first.url, token)).toEqual([{ name: 'Kept' }])
    expect(await first.stop('SIGTERM')).toBe(0)
  }, 60_000)
})
