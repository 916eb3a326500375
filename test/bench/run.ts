import { existsSync, mkdirSync } from 'node:fs'
import os from 'node:os'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { measureChanges } from './changes.ts'
import { measureEmbedded } from './embedded.ts'
import { measureSynchronousCommit } from './failover.ts'
import { measureGrowth } from './growth.ts'
import { ensureWrk } from './load.ts'
import { measureReplicas } from './replicas.ts'
import { printReport } from './report.ts'
import type { Bench } from './services.ts'
import { measureThroughput, PEER_SCENARIOS, READ_SCENARIOS, type ThroughputOptions } from './throughput.ts'

// `bun run bench`: the service on a fresh PostgreSQL database, side by side with its ceilings.
const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '32' },
    pool: { type: 'string', default: '10' },
    // Creates per transaction in the batched database ceiling.
    'ceiling-batch': { type: 'string', default: '32' },
    'log-level': { type: 'string', default: 'info' },
    'large-store': { type: 'string', default: '1000000' },
    'listing-plants': { type: 'string', default: '200000' },
    'skip-growth': { type: 'boolean', default: false },
    'skip-rebuild': { type: 'boolean', default: false },
    'skip-embedded': { type: 'boolean', default: false },
    // GET /plants/changes at scale (test/bench/changes.ts); --changes-only runs just that.
    'skip-changes': { type: 'boolean', default: false },
    'changes-only': { type: 'boolean', default: false },
    'change-streams': { type: 'string', default: '10000' },
    'change-owners': { type: 'string', default: '2000' },
    'change-rate': { type: 'string', default: '100' },
    // Another checkout of the service to measure with this harness (before and after a change).
    'service-root': { type: 'string' },
    // Read replicas (replicas.ts): only them, or all but them; a checkout to compare creates with.
    'replicas-only': { type: 'boolean', default: false },
    'skip-replicas': { type: 'boolean', default: false },
    'compare-root': { type: 'string' },
    // Synchronous replication's cost to a create (failover.ts): only it, or all but it.
    'failover-only': { type: 'boolean', default: false },
    'skip-failover': { type: 'boolean', default: false },
    // The read side only: pages and 304s at 32, 4 and 1 connections beside the CRUD peer and the
    // ceilings, then a page's cost as the store grows and a full listing's memory (--skip-growth).
    'reads-only': { type: 'boolean', default: false },
    // Creates and pages at 32, 4 and 1 connections, the service beside the CRUD peer and nothing
    // else (no ceilings, growth, embedded, rebuild, replicas, failover or changes): the targets
    // against the peer, with each side's CPU per request, in a few minutes.
    'peer-only': { type: 'boolean', default: false },
  },
})

// A server is known to be up by the line it logs at info; above that level it would never be seen.
if (!['info', 'debug', 'trace'].includes(flags['log-level'] ?? 'info'))
  throw new Error(
    '--log-level must be info, debug or trace: the bench waits for the line the server logs at info',
  )
ensureWrk()
const bench: Bench = {
  secret: crypto.randomUUID() + crypto.randomUUID(),
  poolSize: Number(flags.pool),
  logLevel: flags['log-level'] ?? 'info',
  serviceRoot: flags['service-root'],
}
const rounds = Number(flags.rounds)
const seconds = Number(flags.seconds)

async function withDatabase<T>(
  label: string,
  use: (url: string, sql: postgres.Sql) => Promise<T>,
): Promise<T> {
  const database = await createTestDatabase(label)
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  const sql = postgres(database.url, { max: 2, onnotice: () => {} })
  try {
    return await use(database.url, sql)
  } finally {
    await sql.end()
    await database.drop()
  }
}

if (flags['failover-only']) {
  console.log('failover: POST with one synchronous standby against none')
  const failover = await measureSynchronousCommit(bench, {
    rounds,
    seconds,
    connections: Number(flags.connections),
  })
  await writeResults('failover-', { at: new Date().toISOString(), flags, failover })
  process.exit(0)
}

if (flags['changes-only']) {
  const changes = await runChangesBench()
  await writeResults('changes-', { at: new Date().toISOString(), flags, changes })
  process.exit(0)
}

if (flags['peer-only']) {
  const started = runStamp()
  console.log(
    `beside the CRUD peer: ${rounds} rounds of ${seconds} s, pool ${bench.poolSize}; ${describeRun(started)}`,
  )
  const throughput = await runThroughputBench('bench_peer', { scenarios: PEER_SCENARIOS, peerOnly: true })
  const results = { ...started, machine: await describeMachine(), flags, throughput }
  printReport(results)
  await writeResults('peer-', results)
  process.exit(0)
}

if (flags['reads-only']) {
  const started = runStamp()
  console.log(`reads: ${rounds} rounds of ${seconds} s, pool ${bench.poolSize}; ${describeRun(started)}`)
  const throughput = await runThroughputBench('bench_reads', { scenarios: READ_SCENARIOS })
  const growth = flags['skip-growth'] ? undefined : await runGrowthBench()
  const results = { ...started, machine: await describeMachine(), flags, throughput, growth }
  printReport(results)
  await writeResults('reads-', results)
  process.exit(0)
}

const onlyReplicas = flags['replicas-only'] === true
let throughput: Awaited<ReturnType<typeof measureThroughput>> | undefined
if (!onlyReplicas) {
  console.log(
    `throughput: ${rounds} rounds of ${seconds} s, ${flags.connections} connections, pool ${bench.poolSize}`,
  )
  throughput = await runThroughputBench('bench')
}
const growth = flags['skip-growth'] || onlyReplicas ? undefined : await runGrowthBench()
let embedded: Awaited<ReturnType<typeof measureEmbedded>> | undefined
if (!flags['skip-embedded'] && !onlyReplicas) {
  console.log('embedded default: POST and GET')
  embedded = await measureEmbedded(bench, { rounds, seconds, connections: Number(flags.connections) })
}
const rebuild = flags['skip-rebuild'] || onlyReplicas ? undefined : await runRebuildBench()
let replicas: Awaited<ReturnType<typeof measureReplicas>> | undefined
if (!flags['skip-replicas']) {
  console.log('read replicas: a primary and a streaming replica on this machine')
  replicas = await measureReplicas(bench, {
    rounds,
    seconds,
    connections: Number(flags.connections),
    compareRoot: flags['compare-root'],
  })
}
let failover: Awaited<ReturnType<typeof measureSynchronousCommit>> | undefined
if (!flags['skip-failover'] && !onlyReplicas) {
  console.log('failover: POST with one synchronous standby against none')
  failover = await measureSynchronousCommit(bench, {
    rounds,
    seconds,
    connections: Number(flags.connections),
  })
}
const changes = flags['skip-changes'] || onlyReplicas ? undefined : await runChangesBench()

const results = {
  ...runStamp(),
  machine: await describeMachine(),
  flags,
  throughput,
  growth,
  embedded,
  rebuild,
  replicas,
  failover,
  changes,
}
if (throughput) printReport({ ...results, throughput })
await writeResults('', results)

// When, on what and of which commit a run was made: its figures are compared with no others.
function runStamp() {
  return { at: new Date().toISOString(), commit: commitOf(bench.serviceRoot ?? '.') }
}

function commitOf(root: string): string {
  const run = (args: string[]) =>
    Bun.spawnSync(['git', '-C', root, ...args])
      .stdout.toString()
      .trim()
  const head = run(['rev-parse', '--short=12', 'HEAD'])
  return head === ''
    ? 'unknown'
    : `${head}${run(['status', '--porcelain', '--untracked-files=no']) ? ' (modified)' : ''}`
}

function describeRun({ at, commit }: { at: string; commit: string }): string {
  return `${at}, commit ${commit}, load average ${os
    .loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}`
}

async function describeMachine() {
  return {
    cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown'}`,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    bun: Bun.version,
    postgres: await withDatabase('bench_version', async (_url, sql) => {
      const [row] = await sql.unsafe('show server_version')
      return String(row?.server_version ?? '')
    }),
    // At the end of the run: what else the machine was doing meanwhile.
    loadAverage: os.loadavg().map((load) => Number(load.toFixed(2))),
  }
}

async function writeResults(prefix: string, results: { at: string } & Record<string, unknown>) {
  const directory = new URL('./results/', import.meta.url).pathname
  mkdirSync(directory, { recursive: true })
  const file = `${directory}${prefix}${results.at.replaceAll(':', '-')}.json`
  await Bun.write(file, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`\nfigures written to ${file}`)
}

// The throughput rounds the flags ask for, on a new database `name`; `scenarios` and `peerOnly` as
// measureThroughput takes them.
function runThroughputBench(name: string, only: Pick<ThroughputOptions, 'scenarios' | 'peerOnly'> = {}) {
  return withDatabase(name, (url, sql) =>
    measureThroughput(bench, url, sql, {
      rounds,
      seconds,
      connections: Number(flags.connections),
      ceilingBatch: Number(flags['ceiling-batch']),
      ...only,
    }),
  )
}

function runGrowthBench() {
  console.log('growth: page latency by store size, full streamed listing')
  return withDatabase('bench_growth', (url, sql) =>
    measureGrowth(bench, url, sql, {
      rounds,
      seconds: Math.max(3, Math.round(seconds / 2)),
      largeStore: Number(flags['large-store']),
      listingPlants: Number(flags['listing-plants']),
    }),
  )
}

function runChangesBench() {
  const streams = Number(flags['change-streams'])
  console.log(`changes: 0, 1000 and ${streams} open streams, steady creates, POST with streams idle`)
  return withDatabase('bench_changes', (url, sql) =>
    measureChanges(bench, url, sql, {
      streams,
      owners: Number(flags['change-owners']),
      rate: Number(flags['change-rate']),
      seconds,
      connections: Number(flags.connections),
    }),
  )
}

// The projection rebuild bench, from the checkout under measure.
async function runRebuildBench() {
  const script = bench.serviceRoot
    ? `${bench.serviceRoot}/test/bench/rebuild.ts`
    : new URL('./rebuild.ts', import.meta.url).pathname
  if (!existsSync(script)) return undefined
  console.log('rebuild: bun test/bench/rebuild.ts')
  const child = Bun.spawn(['bun', script], { stdout: 'pipe', stderr: 'inherit' })
  const [output, exitCode] = await Promise.all([new Response(child.stdout).text(), child.exited])
  process.stdout.write(output)
  const lastJson = output
    .trim()
    .split('\n')
    .reverse()
    .find((line) => line.startsWith('{'))
  return { exitCode, output, figures: lastJson ? (JSON.parse(lastJson) as unknown) : undefined }
}
