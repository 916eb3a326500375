import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { chmod, mkdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expectCliSucceeded } from '../support/cli-assertions.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { runCli, runServerToExit, startServer } from '../support/server-process.ts'

// A DATA_DIR on a file system with no room left: the server's start and every command stop in one
// line that names DATA_DIR, with no stack. Each file system is a small tmpfs of the test's own
// (these tests run as root), unmounted after.
const mounts: string[] = []
afterAll(async () => {
  for (const mount of mounts) {
    if (Bun.spawnSync(['umount', mount]).exitCode !== 0) Bun.spawnSync(['umount', '-l', mount])
    await rm(mount, { recursive: true, force: true })
  }
})

async function smallDisk(size: string): Promise<string> {
  const mount = mkdtempSync(join(tmpdir(), 'plant-store-full-'))
  const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', mount])
  if (mounted.exitCode !== 0) throw new Error(`cannot mount a tmpfs: ${mounted.stderr.toString()}`)
  mounts.push(mount)
  await chmod(mount, 0o755)
  return mount
}

// Writes a file until the file system has no room left.
function fill(mount: string): void {
  Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(mount, 'filler')}`, 'bs=1M'])
  const free = Bun.spawnSync(['df', '--output=avail', mount]).stdout.toString().split('\n')[1]?.trim()
  expect(free).toBe('0')
}

const remedy = (dataDir: string) =>
  `: free space on its file system (df ${dataDir}) or move DATA_DIR to a larger one, then try again`

const COMMANDS = [
  ['projection', 'verify'],
  ['db', 'migrate'],
  ['events', 'export'],
  ['keys', 'rotate'],
  ['token', 'issue', 'fay'],
]

test('given a store whose disk is full, when the server or any command starts, then each stops in one line naming DATA_DIR, and once room is made the store opens again', async () => {
  // given a store made on a small disk, then the disk filled
  const mount = await smallDisk('96m')
  const dataDir = join(mount, 'data')
  expectCliSucceeded(['db', 'migrate'], await runCli(['db', 'migrate'], { DATA_DIR: dataDir }))
  fill(mount)
  // when
  const start = await runServerToExit({ DATA_DIR: dataDir })
  const commands = await Promise.all(COMMANDS.map((args) => runCli(args, { DATA_DIR: dataDir })))
  // then
  const full = `DATA_DIR ${dataDir} is full (`
  const lines = [start, ...commands].map(({ stderr }) => stderr.replace(/\(.*?\)/, '()'))
  expect(lines).toEqual([
    `plant store cannot start: ${full})${remedy(dataDir)}\n`,
    ...COMMANDS.map(() => `${full})${remedy(dataDir)}\n`),
  ])
  expect([start, ...commands].map(({ exitCode }) => exitCode)).toEqual([1, 1, 1, 1, 1, 1])
  for (const { stderr } of [start, ...commands]) expect(stderr).toMatch(/ is full \(no space left on device/i)
  // and once room is made, the store opens as it was
  await rm(join(mount, 'filler'))
  expectCliSucceeded(['projection', 'verify'], await runCli(['projection', 'verify'], { DATA_DIR: dataDir }))
}, 120_000)

test('given a new DATA_DIR on a disk too small for the database, when the server starts, then it stops in one line naming DATA_DIR', async () => {
  const mount = await smallDisk('8m')
  const dataDir = join(mount, 'data')
  await mkdir(dataDir, { mode: 0o755 })
  const start = await runServerToExit({ DATA_DIR: dataDir })
  expect({ exitCode: start.exitCode, stderr: start.stderr.replace(/\(.*?\)/, '()') }).toEqual({
    exitCode: 1,
    stderr: `plant store cannot start: DATA_DIR ${dataDir} is full (): free space on its file system (df ${dataDir}) or move DATA_DIR to a larger one, then try again\n`,
  })
  expect(start.stderr).toMatch(/ is full \(no space left on device\)/i)
}, 120_000)

test('given a serving store whose disk fills, then creates answer 503 with Retry-After and the log says the database is full, a rebuild and an erasure beside it say DATA_DIR in one line, and once room is made all succeed, none acknowledged lost', async () => {
  // given a server on a small disk, an owner with a plant, and another to erase
  const mount = await smallDisk('96m')
  const dataDir = join(mount, 'data')
  const server = await startServer({ DATA_DIR: dataDir, PORT: '0' })
  try {
    const token = (await runCli(['token', 'issue', 'gil'], { DATA_DIR: dataDir })).stdout.trim()
    const acknowledged: string[] = []
    const create = async (id: number) => {
      const name = `${id}`.padEnd(1024, '.')
      const answer = await postPlant(server.url, token, { id, name })
      if (answer.status === 200) acknowledged.push(name)
      return answer
    }
    expect((await create(1)).status).toBe(200)
    const leaving = (await runCli(['token', 'issue', 'hal'], { DATA_DIR: dataDir })).stdout.trim()
    expect((await postPlant(server.url, leaving, { id: 1, name: 'Hal' })).status).toBe(200)
    // when the disk fills, and creates go on
    fill(mount)
    let refused: Response | undefined
    for (let id = 2; id < 20_000 && refused === undefined; id++) {
      const answer = await create(id)
      if (answer.status !== 200) refused = answer
    }
    // then the first create that could not be written is a 503 saying why, and the log says it
    expect({ status: refused?.status, retryAfter: refused?.headers.get('retry-after') }).toEqual({
      status: 503,
      retryAfter: '5',
    })
    expect(await refused?.json()).toEqual({
      error: 503,
      message: 'the database has no room left to write; retry later',
    })
    const loggedBy = Date.now() + 5_000
    const logged = () => server.logLines().filter((line) => line.includes('database full'))
    while (logged().length === 0 && Date.now() < loggedBy) await Bun.sleep(50)
    const said = logged()
    expect(said.length).toBeGreaterThan(0)
    expect(JSON.parse(said[0] ?? '{}')).toMatchObject({ level: 40 })
    // and a rebuild beside the service stops in one line naming DATA_DIR
    const rebuild = await runCli(['projection', 'rebuild'], { DATA_DIR: dataDir })
    expect({ exitCode: rebuild.exitCode, stderr: rebuild.stderr.replace(/\(.*?\)/, '()') }).toEqual({
      exitCode: 1,
      stderr: `projection rebuild failed, nothing was swapped: DATA_DIR ${dataDir} is full ()${remedy(dataDir)}\n`,
    })
    // and so does an erasure: failed whole, or with the owner hidden and the erasure pending,
    // whichever of its steps met the full disk
    const erasure = await runCli(['owners', 'erase', 'hal'], { DATA_DIR: dataDir })
    const full = `DATA_DIR ${dataDir} is full ()${remedy(dataDir)}`
    expect(erasure.exitCode).toBe(1)
    expect([
      `owners erase failed: ${full}\n`,
      `owners erase: ${full}; the owner is hidden, the erasure pending: run the command again to complete it\n`,
    ]).toContain(erasure.stderr.replace(/\(.*?\)/, '()'))
    // and once room is made, creates succeed again, and every acknowledged plant is listed
    await rm(join(mount, 'filler'))
    let again = 0
    for (let id = 100_000; again !== 200 && id < 100_300; id++) {
      again = (await create(id)).status
      if (again !== 200) await Bun.sleep(100)
    }
    expect(again).toBe(200)
    const listed = (await listEveryPlant(server.url, token)).map(({ name }) => name)
    expect(listed.toSorted()).toEqual(acknowledged.toSorted())
    // and the erasure run again completes
    expectCliSucceeded(
      ['owners', 'erase', 'hal'],
      await runCli(['owners', 'erase', 'hal'], { DATA_DIR: dataDir }),
    )
    expect(await listEveryPlant(server.url, leaving)).toEqual([])
  } finally {
    await server.stop()
  }
}, 120_000)
