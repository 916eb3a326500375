// The CLI's long-running tools on a store of a real size, run one after another as a user would:
// a fresh database is seeded with N sealed events of M owners (interleaved, as creates over time
// leave them, so the reads find a different owner's key at almost every event), then
// `events export` to a file, `events import` of that file into a fresh empty database,
// `projection rebuild`, `projection verify`, `keys rotate` (under a new key-encryption key) and
// `owners erase` of one owner, each the real CLI in a process of its own. Prints each one's wall
// time, events (or keys) a second, the peak RSS of the CLI's process (GNU time's maximum resident
// set size) and the database's size after it, with the load average (docs/performance.md, The
// tools at a real store's size).
// Run: nice -n 10 bun test/bench/tools-at-scale.ts [--events N] [--owners M] [--dir DIR] [--keep]
//   (needs the PostgreSQL of the tests and GNU time; the export file goes to DIR, /tmp by default)
import { Buffer } from 'node:buffer'
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import process from 'node:process'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { CLI_COMMAND, childEnv } from '../support/server-process.ts'
import { TEST_KEY_ENCRYPTION_KEYS, TEST_KEYS } from '../support/test-keys.ts'
import { seedTestEvents } from './seed.ts'

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    events: { type: 'string', default: '10000000' },
    owners: { type: 'string', default: '1000000' },
    dir: { type: 'string', default: '/tmp' },
    keep: { type: 'boolean', default: false },
  },
})
const EVENTS = Number(values.events)
const OWNERS = Number(values.owners)
const ROOT = new URL('../..', import.meta.url).pathname
const RUN_DIR = join(values.dir, `tools-at-scale-${Date.now().toString(36)}`)
mkdirSync(RUN_DIR, { recursive: true })
const EXPORT_FILE = join(RUN_DIR, 'export.ndjson')
const NEW_KEK = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')

type Step = {
  tool: string
  command: string
  seconds: number
  units: number
  unit: string
  peakRssMb: number
  databaseMb: number
  exitCode: number
  stdoutTail: string
  stderrTail: string
}

const steps: Step[] = []
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')
const say = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`)

async function databaseMb(sql: postgres.Sql): Promise<number> {
  const [row] = await sql`select pg_database_size(current_database())::float8 / 1048576 as mb`
  return Math.round(Number(row?.mb ?? 0))
}

// Runs `bun src/cli/command-line.ts <args>` under GNU time, stdin and stdout from and to files when given,
// stderr kept in a file of its own (the progress lines) and its tail shown.
async function runTool(
  tool: string,
  args: string[],
  {
    env,
    stdin,
    stdout,
    units,
    unit = 'events',
    sql,
  }: {
    env: Record<string, string>
    stdin?: string
    stdout?: string
    units: number
    unit?: string
    sql: postgres.Sql
  },
): Promise<Step> {
  const name = tool.replace(/\W+/g, '-')
  const timeFile = join(RUN_DIR, `${name}.time`)
  const stderrFile = join(RUN_DIR, `${name}.stderr`)
  const stdoutFile = stdout ?? join(RUN_DIR, `${name}.stdout`)
  const command = `bun run cli ${args.join(' ')}${stdin ? ' < export.ndjson' : ''}${stdout ? ' > export.ndjson' : ''}`
  say(`${tool}: ${command} (load ${load()})`)
  const started = performance.now()
  const child = Bun.spawn(['/usr/bin/time', '-f', '%M', '-o', timeFile, ...CLI_COMMAND, ...args], {
    cwd: ROOT,
    env: childEnv(env),
    stdin: stdin ? Bun.file(stdin) : 'ignore',
    stdout: Bun.file(stdoutFile),
    stderr: Bun.file(stderrFile),
  })
  const exitCode = await child.exited
  const seconds = (performance.now() - started) / 1000
  const peakKb = Number(/(\d+)\s*$/.exec(readFileSync(timeFile, 'utf8'))?.[1] ?? 0)
  const tail = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n').slice(-3).join('\n')
  const step: Step = {
    tool,
    command,
    seconds,
    units,
    unit,
    peakRssMb: Math.round(peakKb / 1024),
    databaseMb: await databaseMb(sql),
    exitCode,
    stdoutTail: stdout ? `${Math.round(statSync(stdout).size / 2 ** 20)} MB written` : tail(stdoutFile),
    stderrTail: tail(stderrFile),
  }
  say(
    `${tool}: exit ${exitCode}, ${seconds.toFixed(1)} s, ${Math.round(units / seconds)} ${unit}/s, peak RSS ${step.peakRssMb} MB, database ${step.databaseMb} MB (load ${load()})`,
  )
  say(`  stdout: ${step.stdoutTail.replaceAll('\n', '\n          ')}`)
  say(`  stderr: ${step.stderrTail.replaceAll('\n', '\n          ')}`)
  steps.push(step)
  if (exitCode !== 0) throw new Error(`${tool} failed (exit ${exitCode}); its stderr is in ${stderrFile}`)
  return step
}

const databases: TestDatabase[] = []
const connections: postgres.Sql[] = []
try {
  say(
    `${EVENTS} events, ${OWNERS} owners; commit ${execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim()}; load ${load()}; files in ${RUN_DIR}`,
  )
  const source = await freshStore('tools_scale_source')
  // Two connections: the seed reads its source through a cursor on one and writes on the other.
  const sourceSql = postgres(source.url, { max: 2, onnotice: () => {} })
  connections.push(sourceSql)
  const seeding = performance.now()
  await seedTestEvents(sourceSql, 1, EVENTS, `'owner-' || (i % ${OWNERS})`)
  await sourceSql.unsafe('vacuum analyze owner_keys')
  const seeded = (performance.now() - seeding) / 1000
  say(
    `seeded in ${seeded.toFixed(1)} s (${Math.round(EVENTS / seeded)} events/s), database ${await databaseMb(sourceSql)} MB (load ${load()})`,
  )

  const sourceEnv = { DATABASE_URL: source.url }
  await runTool('events export', ['events', 'export'], {
    env: sourceEnv,
    stdout: EXPORT_FILE,
    units: EVENTS,
    sql: sourceSql,
  })
  if (!values.keep) {
    await sourceSql.end()
    await source.drop()
    databases.splice(databases.indexOf(source), 1)
  }

  const target = await freshStore('tools_scale_target')
  const targetSql = postgres(target.url, { max: 1, onnotice: () => {} })
  connections.push(targetSql)
  const env = { DATABASE_URL: target.url }
  await runTool('events import', ['events', 'import'], {
    env,
    stdin: EXPORT_FILE,
    units: EVENTS,
    sql: targetSql,
  })
  if (!values.keep) rmSync(EXPORT_FILE)
  await runTool('projection rebuild', ['projection', 'rebuild'], { env, units: EVENTS, sql: targetSql })
  await runTool('projection verify', ['projection', 'verify'], { env, units: EVENTS, sql: targetSql })
  const rotated = { DATABASE_URL: target.url, KEY_ENCRYPTION_KEYS: `${NEW_KEK},${TEST_KEY_ENCRYPTION_KEYS}` }
  await runTool('keys rotate', ['keys', 'rotate'], {
    env: rotated,
    units: OWNERS,
    unit: 'keys',
    sql: targetSql,
  })
  // owner-1 has the plants i = 1, 1 + M, 1 + 2M, … up to N.
  const plantsOfOne = Math.floor((EVENTS - 1) / OWNERS) + 1
  const erase = await runTool('owners erase', ['owners', 'erase', 'owner-1'], {
    env: rotated,
    units: plantsOfOne,
    sql: targetSql,
  })
  if (erase.stdoutTail !== String(plantsOfOne)) throw new Error(`owners erase printed ${erase.stdoutTail}`)
} finally {
  console.log(`\n| tool | events | owners | time | events/s | peak RSS | database after |`)
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  for (const step of steps) {
    const rate = `${Math.round(step.units / step.seconds).toLocaleString('en')}${step.unit === 'events' ? '' : ` ${step.unit}/s`}`
    console.log(
      `| \`${step.command}\` | ${EVENTS.toLocaleString('en')} | ${OWNERS.toLocaleString('en')} | ${formatTime(step.seconds)} | ${rate} | ${step.peakRssMb} MB | ${step.databaseMb.toLocaleString('en')} MB |`,
    )
  }
  console.log(JSON.stringify({ events: EVENTS, owners: OWNERS, load: load(), steps }))
  for (const sql of connections) await sql.end().catch(() => {})
  if (!values.keep) {
    for (const database of databases) await database.drop().catch(() => {})
    rmSync(EXPORT_FILE, { force: true })
    console.log(`each tool's stderr (its progress) is in ${RUN_DIR}`)
  } else {
    console.log(`kept: ${databases.map((database) => database.url).join(' ')} and ${RUN_DIR}`)
  }
}

// A migrated, empty store whose log is past its one-time upgrade (the constraint events_erasable
// validated, as a store a current version made once its service has opened it): so each command
// opens it as it opens a real store, and the seed (sealed) satisfies it.
async function freshStore(label: string): Promise<TestDatabase> {
  const database = await createTestDatabase(label)
  databases.push(database)
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  await sql.unsafe('alter table events validate constraint events_erasable')
  await sql.end()
  return database
}

function formatTime(seconds: number): string {
  return seconds < 60
    ? `${seconds.toFixed(1)} s`
    : `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`
}
