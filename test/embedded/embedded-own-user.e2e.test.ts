import { describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { chmod, chown, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { issueToken } from '../../src/auth/issue-token.ts'
import { makeDataDir, otherUsersSecret } from '../support/data-dir.ts'
import { leftAfterTests } from '../support/left-after-tests.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import {
  runServerToExit,
  SERVER_COMMAND,
  type ServerProcess,
  spawnServer,
  startServer,
} from '../support/server-process.ts'

// Who the embedded PostgreSQL runs as, and who else can reach it. These tests run as root, as this
// project's machines do; the system's `postgres` user and `nobody` play the other local users.
const POSTGRES_UID = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())
const OTHERS = ['nobody', 'postgres']

const { servers, folders } = leftAfterTests()

async function dataDir(): Promise<string> {
  const folder = await makeDataDir('plant-store-own-user-')
  folders.push(folder)
  return folder
}

async function postmasterPid(folder: string): Promise<number> {
  return Number((await readFile(join(folder, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
}

async function uidOf(pid: number): Promise<number> {
  return Number(/\nUid:\t(\d+)\t/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1])
}

function nameOf(uid: number): string {
  return Bun.spawnSync(['id', '-nu', String(uid)])
    .stdout.toString()
    .trim()
}

// A command run as another local user; its exit code and error output.
function runAsUser(user: string, command: string[]): { code: number; stderr: string } {
  const ran = Bun.spawnSync(['runuser', '-u', user, '--', ...command], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp' },
  })
  return { code: ran.exitCode, stderr: ran.stderr.toString() }
}

// Whether another local user is refused each way into the server: a query on its socket, a
// listing of its data folder, a file of it.
const ALL_REFUSED = { query: true, list: true, read: true }
function refusals(user: string, folder: string): typeof ALL_REFUSED {
  const socket = join(folder, 'socket')
  const query = ['psql', '-h', socket, '-U', 'postgres', '-d', 'postgres', '-Atc', 'select 1']
  return {
    query: runAsUser(user, query).code !== 0,
    list: runAsUser(user, ['ls', join(folder, 'postgres')]).code !== 0,
    read: runAsUser(user, ['cat', join(folder, 'postgres', 'PG_VERSION')]).code !== 0,
  }
}

// One test reads the secret of a server run as the postgres user.
async function tokenFor(folder: string, subject: string): Promise<string> {
  return issueToken(await otherUsersSecret(folder), { subject, ttlSeconds: 600, now: new Date() })
}

// A server started as root on a new DATA_DIR, and plant 1 (`name`) created through it by `subject`.
async function servedWithPlant(subject: string, name: string) {
  const folder = await dataDir()
  const server = await startServer({ DATA_DIR: folder })
  servers.push(server)
  const token = await tokenFor(folder, subject)
  expect((await postPlant(server.url, token, { id: 1, name })).status).toBe(200)
  return { folder, server, token }
}

describe('as root', () => {
  test('PostgreSQL runs as a user of its own, whom no other local user can connect as or read', async () => {
    // given a service started as root on a DATA_DIR others may enter
    const { folder, server, token } = await servedWithPlant('root-owned', 'Fern')
    // then its PostgreSQL runs neither as root nor as the system's postgres user, but its own
    const uid = await uidOf(await postmasterPid(folder))
    expect(uid).not.toBe(0)
    expect(uid).not.toBe(POSTGRES_UID)
    expect(nameOf(uid)).toBe('plant-store-postgres')
    // and no other local user can query it on its socket, list its data or read a file of it
    for (const other of OTHERS) {
      expect({ other, refused: refusals(other, folder) }).toEqual({ other, refused: ALL_REFUSED })
    }
    // while the service itself goes on serving
    expect(await listEveryPlant(server.url, token)).toEqual([{ name: 'Fern' }])
    expect(await server.stop('SIGTERM')).toBe(0)
  }, 60_000)

  test("a DATA_DIR an earlier version ran as the postgres user is handed to the server's own user", async () => {
    // given a store served as root, whose data folder is then the postgres user's, as before
    const { folder, server: first, token } = await servedWithPlant('kept', 'Kept')
    expect(await first.stop('SIGTERM')).toBe(0)
    Bun.spawnSync(['chown', '-R', 'postgres:postgres', join(folder, 'postgres')])
    // when it starts again as root
    const server = await startServer({ DATA_DIR: folder })
    servers.push(server)
    // then it serves what was kept, from a folder that the postgres user no longer owns
    expect(await listEveryPlant(server.url, token)).toEqual([{ name: 'Kept' }])
    expect(await uidOf(await postmasterPid(folder))).not.toBe(POSTGRES_UID)
    expect(refusals('postgres', folder)).toEqual(ALL_REFUSED)
    expect(await server.stop('SIGTERM')).toBe(0)
  }, 60_000)

  test('the programs it starts for PostgreSQL get none of its secrets in their environment', async () => {
    // given secrets of the service's own, each a value no other process holds
    const folder = await dataDir()
    const secret = `secret-${randomBytes(24).toString('hex')}`
    const kek = randomBytes(32).toString('base64')
    // when it starts for the first time (initdb, the reach check, the server)
    const child = spawnServer({
      HOME: '/tmp',
      DATA_DIR: folder,
      AUTH_JWT_SECRET: secret,
      KEY_ENCRYPTION_KEYS: kek,
    })
    servers.push({ process: child } as unknown as ServerProcess)
    // Every program seen, by pid and command line: a child forked from the server's watchdog shows
    // the shell's command line until it execs postgres, so a pid is looked at again when it changes.
    const seen = new Map<string, string>()
    const leaked = new Set<string>()
    const listening = (async () => {
      const reader = child.stdout.getReader()
      let text = ''
      while (!text.includes('plant store listening')) {
        const { done, value } = await reader.read()
        if (done) throw new Error(`the service did not start: ${await new Response(child.stderr).text()}`)
        text += new TextDecoder().decode(value)
      }
    })()
    let started = false
    void listening.finally(() => {
      started = true
    })
    while (!started) {
      for (const entry of readdirSync('/proc')) {
        const pid = Number(entry)
        if (!Number.isInteger(pid) || pid === child.pid) continue
        try {
          const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
          if (!command.includes(folder) || seen.has(`${pid} ${command}`)) continue
          seen.set(`${pid} ${command}`, command)
          const environ = readFileSync(`/proc/${pid}/environ`, 'utf8')
          if (environ.includes(secret) || environ.includes(kek)) leaked.add(command.split(' ')[0] ?? '')
        } catch {
          // gone meanwhile
        }
      }
      await Bun.sleep(2)
    }
    await listening
    // then initdb and the server were seen at work in DATA_DIR, and none of them held a secret
    const programs = [...seen.values()].map((command) => command.split(' ')[0] ?? '')
    expect(programs.some((program) => program.endsWith('/initdb'))).toBe(true)
    expect(programs.some((program) => program.endsWith('/postgres'))).toBe(true)
    expect([...leaked]).toEqual([])
    child.kill('SIGTERM')
    expect(await child.exited).toBe(0)
  }, 60_000)
})

describe('as root, a start that cannot go on says what to do in one line', () => {
  test('when its own user does not exist and cannot be made', async () => {
    // given a view of the system (a mount namespace) whose user database lacks the server's user
    // and that has no working useradd
    const folder = await dataDir()
    const passwd = join(folder, 'passwd')
    const users = await readFile('/etc/passwd', 'utf8')
    await writeFile(
      passwd,
      users
        .split('\n')
        .filter((line) => !line.startsWith('plant-store-postgres:'))
        .join('\n'),
    )
    const withoutUser =
      'mount --bind "$0" /etc/passwd && mount --bind /dev/null /usr/sbin/useradd && exec "$@"'
    // when the service starts there
    const { stderr, exitCode: code } = await runServerToExit(
      { HOME: '/tmp', DATA_DIR: join(folder, 'data') },
      ['unshare', '-m', 'sh', '-c', withoutUser, passwd, ...SERVER_COMMAND],
    )
    // then it says in one line how to make the user, or what else to do, and starts nothing
    expect(code).toBe(1)
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stderr).toStartWith(
      'plant store cannot start: running as root, which PostgreSQL refuses, and its own user plant-store-postgres cannot be made (',
    )
    expect(stderr).toContain(
      'make it (useradd --system --user-group --no-create-home --shell /usr/sbin/nologin plant-store-postgres), run the service as another user, or set DATABASE_URL',
    )
    expect(existsSync(join(folder, 'data', 'postgres'))).toBe(false)
  }, 60_000)

  test('when its user cannot enter DATA_DIR: the line names the folder', async () => {
    const folder = await dataDir()
    const closed = join(folder, 'private')
    await mkdir(closed, { mode: 0o700 })
    const { stderr, exitCode: code } = await runServerToExit({ HOME: '/tmp', DATA_DIR: join(closed, 'data') })
    expect(code).toBe(1)
    expect(stderr.trim().split('\n')).toEqual([
      `plant store cannot start: DATA_DIR ${join(closed, 'data')}: PostgreSQL runs as the user plant-store-postgres (it refuses root), who cannot enter ${closed}: let it (chmod o+x ${closed}), choose a folder it can reach, or set DATABASE_URL`,
    ])
  }, 60_000)
})

describe('run by an unprivileged user', () => {
  test('PostgreSQL runs as that user, and no other local user can connect to it or read it', async () => {
    // given a DATA_DIR of the system's postgres user, and the service started as that user
    const folder = await dataDir()
    await chown(folder, POSTGRES_UID, POSTGRES_UID)
    await chmod(folder, 0o755)
    const asPostgres = ['setpriv', `--reuid=${POSTGRES_UID}`, '--regid=postgres', '--init-groups']
    const server = await startServer({ DATA_DIR: folder, HOME: folder }, [...asPostgres, ...SERVER_COMMAND])
    servers.push(server)
    const token = await tokenFor(folder, 'unprivileged')
    expect((await postPlant(server.url, token, { id: 1, name: 'Pothos' })).status).toBe(200)
    // then its server is its own user's, and nobody else can query it or read its files
    expect(await uidOf(await postmasterPid(folder))).toBe(POSTGRES_UID)
    expect(refusals('nobody', folder)).toEqual(ALL_REFUSED)
    expect(await server.stop('SIGTERM')).toBe(0)
  }, 60_000)
})
