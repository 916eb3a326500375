import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { seedSealed } from '../support/sealed-seed.ts'
import { CLI_COMMAND, childEnv, type Env, runCli } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// The long commands on a terminal: `events export` and `events import` run under a pseudo-terminal
// (util-linux `script`), stderr the terminal, and draw their progress bar there while stdout, the
// export, stays the data alone; the import of that export then verifies.

const ROOT = new URL('../..', import.meta.url).pathname
const EVENTS = 100_000
const OWNERS = 1000

let source: ServiceStorage
let target: ServiceStorage
let dir: string
beforeAll(async () => {
  ;[source, target] = await Promise.all([
    startService({ label: 'progress_source', instances: 0 }),
    startService({ label: 'progress_target', instances: 0 }),
  ])
  dir = await mkdtemp(join(tmpdir(), 'plant-store-progress-'))
  for (const store of [source, target]) await openedStore(String(store.databaseUrl))
  // Two connections: the seed reads its source through a cursor on one and writes on the other.
  const sql = postgres(String(source.databaseUrl), { max: 2, onnotice: () => {} })
  try {
    await seedSealed(
      sql,
      createKeyring(TEST_KEYS),
      `select 'owner-' || (n % ${OWNERS}) as owner, n::bigint as id, 'plant ' || n as name, null::text as tag
       from generate_series(1, ${EVENTS}) as n`,
      { project: true },
    )
  } finally {
    await sql.end()
  }
}, 120_000)
afterAll(async () => {
  await source?.stop()
  await target?.stop()
  if (dir) await rm(dir, { recursive: true, force: true })
})

// Migrated, with the log past its one-time upgrade (as once a service has opened it), so that the
// commands' time is their own work.
async function openedStore(url: string): Promise<void> {
  await migratePostgresDatabase(url, undefined, TEST_KEYS)
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql.unsafe('alter table events validate constraint events_erasable')
  await sql.end()
}

// Runs a command of the CLI, with its redirections, with a pseudo-terminal for its terminal: what
// it wrote there, and its exit code.
async function onTerminal(
  args: string[],
  redirections: string,
  env: Env,
): Promise<{ terminal: string; exitCode: number }> {
  const shell = `${[...CLI_COMMAND, ...args].join(' ')} ${redirections}`
  const child = Bun.spawn(['script', '-qfec', shell, '/dev/null'], {
    cwd: ROOT,
    env: childEnv(env),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [terminal, exitCode] = await Promise.all([new Response(child.stdout).text(), child.exited])
  return { terminal, exitCode }
}

const BAR = String.raw`\[[#-]{30}\] +\d{1,3}%`

test('on a terminal, export draws a bar on stderr and writes only the export to stdout; import of it draws one too, and the store verifies', async () => {
  // when: the export, stdout to a file, stderr the terminal
  const file = join(dir, 'export.ndjson')
  const exported = await onTerminal(['events', 'export'], `> ${file}`, source.env)
  // then: the bar, redrawn in place, then the summary on a line of its own
  expect(exported.exitCode).toBe(0)
  expect(exported.terminal).toMatch(new RegExp(`\\rexport ${BAR} \\d+/${EVENTS} events, \\d+ events/s, ETA`))
  expect(exported.terminal).toMatch(
    new RegExp(`\\n(\\r)?exported ${EVENTS} events, with ${OWNERS} owner key\\(s\\)`),
  )
  // and stdout holds the export alone: a header, the keys, the events, each line JSON
  const lines = (await readFile(file, 'utf8')).trimEnd().split('\n')
  expect(lines.length).toBe(1 + OWNERS + EVENTS)
  expect(lines.filter((line) => line.includes('\r') || line.includes('events/s'))).toEqual([])
  expect(lines.map((line) => typeof JSON.parse(line))).toEqual(lines.map(() => 'object'))

  // when: that file imported into an empty store, stdin the file, stderr the terminal
  const imported = await onTerminal(['events', 'import'], `< ${file}`, target.env)
  // then: a bar of the input read, and every event imported
  expect(imported.exitCode).toBe(0)
  expect(imported.terminal).toMatch(
    new RegExp(`\\rimport ${BAR} \\d+ events \\(\\d+% of the input\\), \\d+ events/s, ETA`),
  )
  expect(imported.terminal).toContain(`imported ${EVENTS} events, each with its plant`)
  const verified = await runCli(['projection', 'verify'], target.env)
  expect(verified).toMatchObject({
    exitCode: 0,
    stdout: `the projection matches the fold of the log (${EVENTS} events)\n`,
  })
}, 240_000)
