// `projection verify` and `projection rebuild` as an operator runs them (`bun run --silent cli …`
// with DATABASE_URL), on a store seeded once in the database `tools_bench` (sealed events of M
// owners, interleaved as creates over time leave them, with their plants rows). Each tool runs in
// a process of its own; the summed PSS of its process tree is sampled from /proc every 100 ms.
// Prints each one's wall time, events a second and peak PSS (docs/performance.md, Projection
// verify streamed by owner).
// Run: nice -n 10 bun test/bench/projection-tools.ts [--events N] [--owners M] [--reuse] [--drop]
//   [--tools verify,rebuild] [--checkout DIR]
//   --reuse: keep the seeded tools_bench of an earlier run; --drop: drop tools_bench at the end;
//   --checkout: run the CLI of another checkout (an earlier commit's `git archive`, say, with a
//   node_modules) on the same store, for a before and after.
import { loadavg } from 'node:os'
import process from 'node:process'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { sampleTreePss } from '../support/pss.ts'
import { childEnv } from '../support/server-process.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { countEvents, seedTestEvents } from './seed.ts'

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    events: { type: 'string', default: '160000' },
    owners: { type: 'string', default: '20000' },
    tools: { type: 'string', default: 'verify,rebuild,verify' },
    reuse: { type: 'boolean', default: false },
    drop: { type: 'boolean', default: false },
    checkout: { type: 'string' },
  },
})
const EVENTS = Number(values.events)
const OWNERS = Number(values.owners)
const NAME = 'tools_bench'
const ROOT = values.checkout ?? new URL('../..', import.meta.url).pathname
const url = new URL(POSTGRES_ADMIN_URL)
url.pathname = `/${NAME}`
const DATABASE_URL = url.toString()

async function admin(statement: string): Promise<void> {
  const sql = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} })
  await sql.unsafe(statement).finally(() => sql.end())
}

// A migrated store past its one-time upgrade, seeded with EVENTS sealed events of OWNERS owners.
async function seedStore(): Promise<void> {
  await admin(`drop database if exists ${NAME} with (force)`)
  await admin(`create database ${NAME}`)
  await migratePostgresDatabase(DATABASE_URL, undefined, TEST_KEYS)
  const sql = postgres(DATABASE_URL, { max: 2, onnotice: () => {} })
  try {
    await sql.unsafe('alter table events validate constraint events_erasable')
    await seedTestEvents(sql, 1, EVENTS, `'owner-' || (i % ${OWNERS})`)
    await sql.unsafe('vacuum analyze owner_keys')
  } finally {
    await sql.end()
  }
}

async function storedEvents(): Promise<number> {
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  return countEvents(sql).finally(() => sql.end())
}

async function runTool(tool: string, events: number) {
  const args = ['bun', 'run', '--silent', 'cli', 'projection', tool]
  const started = performance.now()
  const child = Bun.spawn(args, {
    cwd: ROOT,
    env: childEnv({ DATABASE_URL }),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const pss = sampleTreePss(child.pid)
  const [exitCode, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  const { peak } = pss.stop()
  const seconds = (performance.now() - started) / 1000
  const rate = Math.round(events / seconds)
  // The CPU of the tool's processes (not PostgreSQL's): steadier than wall time on busy cores.
  const usage = child.resourceUsage()
  const cpu = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1e6 : Number.NaN
  console.log(
    `projection ${tool}: exit ${exitCode}, ${seconds.toFixed(1)} s, ${rate} events/s, CPU ${cpu.toFixed(1)} s, peak PSS ${Math.round(peak)} MB (load ${loadavg()[0]?.toFixed(1)})`,
  )
  console.log(`  ${stdout.trim().split('\n').at(-1)}`)
  if (exitCode !== 0) throw new Error(`projection ${tool} failed: ${stderr}`)
  return { tool, seconds, rate, cpu, peakPssMb: Math.round(peak) }
}

try {
  if (!values.reuse) await seedStore()
  const events = await storedEvents()
  console.log(`${events} events, ${OWNERS} owners in ${NAME}`)
  const results = []
  for (const tool of values.tools.split(',')) results.push(await runTool(tool, events))
  console.log(`\n| \`bun run --silent cli projection …\` | events | time | events/s | CLI CPU | peak PSS |`)
  console.log('|---|---:|---:|---:|---:|---:|')
  for (const { tool, seconds, rate, cpu, peakPssMb } of results) {
    console.log(
      `| ${tool} | ${events} | ${seconds.toFixed(1)} s | ${rate} | ${cpu.toFixed(1)} s | ${peakPssMb} MB |`,
    )
  }
} finally {
  if (values.drop) await admin(`drop database if exists ${NAME} with (force)`)
}
