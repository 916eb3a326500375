import { afterAll, describe, expect, test } from 'bun:test'
import { chmod, chown, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { makeDataDir } from '../support/data-dir.ts'
import { runCli, runServerToExit } from '../support/server-process.ts'

// As root, with `nobody` as the other local user: a DATA_DIR, or a file in it, that another user
// could have written is refused by the server and the CLI in one line, and no link planted where
// root writes is written through.
const ROOT = new URL('../..', import.meta.url).pathname
const NOBODY = Number(Bun.spawnSync(['id', '-u', 'nobody']).stdout.toString().trim())
const SECRET = 'c2VjcmV0IG9mIG5vYm9keSdzIG93biwgMzIgYnl0ZXMh'
const KEK = Buffer.alloc(32, 9).toString('base64')

const folders: string[] = []
afterAll(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true })
})

async function folder(): Promise<string> {
  const made = await makeDataDir('plant-store-own-data-dir-')
  folders.push(made)
  return made
}

// A file only root may read or write, with text of its own, for a link to point at.
async function rootOnlyFile(within: string): Promise<{ path: string; text: string }> {
  const path = join(within, 'root-only')
  const text = `root's own text ${crypto.randomUUID()}\n`
  await writeFile(path, text, { mode: 0o600 })
  return { path, text }
}

function runAsNobody(script: string, ...args: string[]): void {
  const ran = Bun.spawnSync(['runuser', '-u', 'nobody', '--', 'sh', '-c', script, ...args])
  if (ran.exitCode !== 0) throw new Error(`as nobody: ${ran.stderr.toString()}`)
}

// The server's start and two commands (one that opens the store, one that signs with its secret),
// each with no auth or key setting: what each printed on stderr and its exit code.
async function everyEntry(dataDir: string) {
  const [start, verify, token] = await Promise.all([
    runServerToExit({ DATA_DIR: dataDir }),
    runCli(['projection', 'verify'], { DATA_DIR: dataDir }),
    runCli(['token', 'issue', 'victim'], { DATA_DIR: dataDir }),
  ])
  return {
    start: { code: start.exitCode, stderr: start.stderr },
    verify: { code: verify.exitCode, stderr: verify.stderr },
    token: { code: token.exitCode, stderr: token.stderr, stdout: token.stdout },
  }
}

function refusedEverywhere(line: string) {
  return {
    start: { code: 1, stderr: `plant store cannot start: ${line}\n` },
    verify: { code: 1, stderr: `${line}\n` },
    token: { code: 1, stderr: `${line}\n`, stdout: '' },
  }
}

describe('as root, a DATA_DIR that is not only ours', () => {
  test("given a DATA_DIR that nobody made first, with nobody's token secret and key file in it, when the server or a command starts, then each is refused in one line naming DATA_DIR, its owner and what to do, and nothing is made there", async () => {
    // given
    const dataDir = join(await folder(), 'data')
    await mkdir(dataDir)
    await chown(dataDir, NOBODY, NOBODY)
    runAsNobody(
      'echo "$1" > "$0/auth-secret" && echo "$2" > "$0/key-encryption-keys" && chmod 644 "$0"/*',
      dataDir,
      SECRET,
      KEK,
    )
    // when
    const outcome = await everyEntry(dataDir)
    // then
    expect(outcome).toEqual(
      refusedEverywhere(
        `DATA_DIR ${dataDir} belongs to nobody (uid ${NOBODY}), not to this user, root (uid 0): another user's folder could hold their token secret, keys and links; if it is that user's store, run as that user; otherwise set DATA_DIR to a folder of this user's (a missing one is made), or, if you made it, chown 0 ${dataDir}`,
      ),
    )
    expect((await readdir(dataDir)).sort()).toEqual(['auth-secret', 'key-encryption-keys'])
  }, 60_000)

  test("given a DATA_DIR that is nobody's link to a folder of root's, when the server or a command starts, then each is refused in one line", async () => {
    // in a folder that every user writes in, as /tmp
    const within = await folder()
    await chmod(within, 0o1777)
    const dataDir = join(within, 'data')
    await mkdir(join(within, 'target'))
    runAsNobody('ln -s "$1" "$0"', dataDir, join(within, 'target'))
    const outcome = await everyEntry(dataDir)
    expect(outcome).toEqual(
      refusedEverywhere(
        `DATA_DIR ${dataDir} (a link) belongs to nobody (uid ${NOBODY}), not to this user, root (uid 0): another user's folder could hold their token secret, keys and links; if it is that user's store, run as that user; otherwise set DATA_DIR to a folder of this user's (a missing one is made), or, if you made it, chown 0 ${dataDir}`,
      ),
    )
    expect(await readdir(join(within, 'target'))).toEqual([])
  }, 60_000)

  test('given a DATA_DIR of root that others may write in, when the server or a command starts, then each is refused in one line', async () => {
    const dataDir = join(await folder(), 'data')
    await mkdir(dataDir)
    await chmod(dataDir, 0o777)
    const outcome = await everyEntry(dataDir)
    expect(outcome).toEqual(
      refusedEverywhere(
        `DATA_DIR ${dataDir} may be written by other users than its owner, root (uid 0) (mode 0777): they could put their own token secret, keys or links in it; chmod go-w ${dataDir}, or set DATA_DIR to a folder of this user's alone`,
      ),
    )
    expect(await readdir(dataDir)).toEqual([])
  }, 60_000)

  test("given root's DATA_DIR holding a token secret that nobody wrote, when a token is issued, then it is refused naming the file and its owner", async () => {
    const dataDir = await folder()
    await writeFile(join(dataDir, 'auth-secret'), `${SECRET}\n`, { mode: 0o644 })
    await chown(join(dataDir, 'auth-secret'), NOBODY, NOBODY)
    const token = await runCli(['token', 'issue', 'victim'], { DATA_DIR: dataDir })
    expect({ code: token.exitCode, stderr: token.stderr, stdout: token.stdout }).toEqual({
      code: 1,
      stderr: `DATA_DIR ${dataDir}'s auth-secret is a file of nobody (uid ${NOBODY}) with mode 0644, not this user's alone (root (uid 0), mode 0600): another user could have written it; if you did, chown 0 and chmod 600 it, or else remove it and whatever was made with it\n`,
      stdout: '',
    })
  }, 60_000)
})

describe('as root, a link planted where root writes', () => {
  test.each(['server.pid', 'postgres.log', 'key-encryption-keys'])(
    'given DATA_DIR/%s a link to a root-only file, when the server starts, then it is refused in one line and the file is untouched',
    async (name) => {
      // given
      const dataDir = await folder()
      const target = await rootOnlyFile(await folder())
      await symlink(target.path, join(dataDir, name))
      // when
      const start = await runServerToExit({ DATA_DIR: dataDir })
      // then
      expect(start.exitCode).toBe(1)
      expect(start.stderr.trim().split('\n')).toHaveLength(1)
      expect(start.stderr).toStartWith('plant store cannot start: ')
      expect(start.stderr).toContain(dataDir)
      expect(start.stderr).toContain(name)
      expect(start.stderr).toContain('link')
      expect(await readFile(target.path, 'utf8')).toBe(target.text)
    },
    60_000,
  )

  test("given a watcher that puts a link to a root-only file as postgres.log in each folder handed to the test servers' user, when a test process run as root opens a store, then the open is refused naming the link and the file is untouched", async () => {
    // given a temporary folder like /tmp, and the watcher at work in it: root stands in for the
    // server's user, who owns those folders and so may put anything in them
    const tmp = await folder()
    await chmod(tmp, 0o1777)
    const target = await rootOnlyFile(await folder())
    const plant = `while :; do
      for d in "$0"/plant-store-memory-* "$0"/plant-store-*/making-*; do
        [ -d "$d" ] && [ ! -L "$d/postgres.log" ] && ln -s "$1" "$d/postgres.log" 2>/dev/null
      done
      sleep 0.005
    done`
    const watcher = Bun.spawn(['sh', '-c', plant, tmp, target.path], { stdout: 'ignore', stderr: 'ignore' })
    try {
      // when
      const home = await folder()
      const child = Bun.spawn(['bun', 'test/embedded/fixtures/test-stores.ts', '1'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [stdout, stderr] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
      ])
      await child.exited
      // then
      const outcome = JSON.parse(stdout.split('\n')[0] || `{"stderr": ${JSON.stringify(stderr)}}`) as {
        created?: number[]
        refused?: string
      }
      expect(outcome.created).toEqual([])
      expect(outcome.refused).toMatch(
        /\/postgres\.log is not a file of this user's alone \(a link, or another user's file\)/,
      )
      expect(await readFile(target.path, 'utf8')).toBe(target.text)
    } finally {
      watcher.kill('SIGKILL')
      await watcher.exited
    }
  }, 120_000)
})

// DATA_DIR is ours all the way down: a folder above it that another user may change lets them move
// it away and put their own in its place, so every folder on the way to it must be root's or ours
// and writable by no one else, but a sticky folder (as /tmp) above a folder of ours or root's.
describe('as root, a DATA_DIR below a folder that is not only ours', () => {
  const FIX = 'set DATA_DIR to a folder whose every parent only root or this user may change'

  // The server's start and two commands on `dataDir` are each refused in the one line that names
  // the folder or link at fault (`where`), what is wrong with it and the fix.
  async function expectRefusedBelow(dataDir: string, where: string, what: string, fix = FIX) {
    const line = `DATA_DIR ${dataDir} lies below ${where}, which ${what}: another user could move DATA_DIR away and put their own in its place; ${fix}`
    expect(await everyEntry(dataDir)).toEqual(refusedEverywhere(line))
  }

  test('given a store in x/data, x then opened to every user without the sticky bit, when nobody moves data away, then the server and every command refuse in one line naming DATA_DIR, x and the fix, and no new secret or database is made in its place', async () => {
    // given a store whose folder x was root's alone when it was made, and a token issued from it
    const x = join(await folder(), 'x')
    await mkdir(x, { mode: 0o755 })
    const dataDir = join(x, 'data')
    expect((await runCli(['db', 'migrate'], { DATA_DIR: dataDir })).exitCode).toBe(0)
    expect((await runCli(['token', 'issue', 'victim'], { DATA_DIR: dataDir })).exitCode).toBe(0)
    const secret = await readFile(join(dataDir, 'auth-secret'), 'utf8')
    // and x then opened to every user, with no sticky bit
    await chmod(x, 0o777)
    // when nobody moves DATA_DIR away
    runAsNobody('mv "$0/data" "$0/moved"', x)
    // then
    await expectRefusedBelow(
      dataDir,
      x,
      'users other than its owner may write in (mode 0777)',
      `chmod go-w ${x}, or ${FIX}`,
    )
    expect(await readdir(x)).toEqual(['moved'])
    expect(await readFile(join(x, 'moved', 'auth-secret'), 'utf8')).toBe(secret)
  }, 120_000)

  test.each([
    ['writable by its group', 0o775, 0, 'users other than its owner may write in (mode 0775)'],
    ['of nobody', 0o755, NOBODY, `belongs to nobody (uid ${NOBODY})`],
  ])(
    'given DATA_DIR in a folder %s, when the server or a command starts, then each is refused in one line and nothing is made',
    async (_, mode, owner, what) => {
      const x = join(await folder(), 'x')
      await mkdir(x)
      await chmod(x, mode)
      await chown(x, owner, owner)
      const dataDir = join(x, 'data')
      const fix = owner === 0 ? `chmod go-w ${x}, or ${FIX}` : `chown 0 ${x}, or ${FIX}`
      await expectRefusedBelow(dataDir, x, what, fix)
      expect(await readdir(x)).toEqual([])
    },
    120_000,
  )

  test("given a sticky folder every user may write in, when DATA_DIR lies below nobody's folder in it, then each entry is refused; when below root's folder, a token is issued", async () => {
    // given
    const tmp = await folder()
    await chmod(tmp, 0o1777)
    runAsNobody('mkdir -m 755 "$0/theirs"', tmp)
    await mkdir(join(tmp, 'ours'), { mode: 0o755 })
    const theirs = join(tmp, 'theirs', 'data')
    // when, then
    await expectRefusedBelow(
      theirs,
      join(tmp, 'theirs'),
      `belongs to nobody (uid ${NOBODY})`,
      `chown 0 ${join(tmp, 'theirs')}, or ${FIX}`,
    )
    const ours = await runCli(['token', 'issue', 'owner'], { DATA_DIR: join(tmp, 'ours', 'data') })
    expect({ code: ours.exitCode, stderr: ours.stderr }).toEqual({ code: 0, stderr: '' })
  }, 120_000)

  test("given DATA_DIR reached through nobody's link in a sticky folder, when the server or a command starts, then each is refused in one line naming the link, and nothing is made where it points", async () => {
    const tmp = await folder()
    await chmod(tmp, 0o1777)
    const target = await folder()
    runAsNobody('ln -s "$1" "$0/way"', tmp, target)
    const dataDir = join(tmp, 'way', 'data')
    await expectRefusedBelow(
      dataDir,
      join(tmp, 'way'),
      `belongs to nobody (uid ${NOBODY}), in ${tmp}, where every user may make files (mode 1777)`,
    )
    expect(await readdir(target)).toEqual([])
  }, 120_000)
})
