// The embedded default's targets (docs/operating.md, The embedded default), measured:
//   bun test/bench/embedded-default.ts [--rounds 3] [--seconds 5] [--connections 32] [--suite-runs 3]
//                                      [--suite-root DIR]   (the in-memory suite on another checkout)
//                                      [--suite-only]       (the in-memory suite alone)
// - first start and restart to /health 200;
// - the summed PSS of the service and its PostgreSQL processes, idle and under load;
// - POST and GET limit=20 on the embedded default beside the same service on the machine's
//   PostgreSQL (TEST_POSTGRES_URL), round after round, with the CPU of each side per request;
// - a user's test file of six tests on createInMemoryStore (in-memory-suite.ts): its time and the
//   peak summed PSS of the test process and its PostgreSQL; and the time of a new store.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { createInMemoryStore } from '../../src/test-store.ts'
import { makeDataDirSync } from '../support/data-dir.ts'
import { median } from '../support/percentiles.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { processTree, sampleTreePss, treePssMb } from '../support/pss.ts'
import { runCli, type ServerProcess, startServer } from '../support/server-process.ts'
import { meterCpu, processCpuMs } from './cpu.ts'
import { ensureWrk, runsAgainst } from './load.ts'
import { writeFixture } from './tokens.ts'

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    'suite-runs': { type: 'string', default: '3' },
    'suite-root': { type: 'string' },
    'suite-only': { type: 'boolean', default: false },
  },
})
const ROOT = new URL('../..', import.meta.url).pathname
const SECRET = 'embedded-bench-secret-of-at-least-32-bytes'
const READERS = 200
const PLANTS_PER_READER = 50
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const fixed = (value: number, digits = 1) => value.toFixed(digits)

ensureWrk()
const report: Record<string, unknown> = { at: new Date().toISOString(), loadBefore: loadAverage() }
const folders: string[] = []

// Spawn to the first /health 200.
async function timedStart(env: Record<string, string>): Promise<{ server: ServerProcess; ms: number }> {
  const started = performance.now()
  const server = await startServer({ AUTH_JWT_SECRET: SECRET, ...env })
  while ((await fetch(`${server.url}/health`).catch(() => undefined))?.status !== 200) await Bun.sleep(5)
  return { server, ms: performance.now() - started }
}

function dataDir(): string {
  const folder = makeDataDirSync('plant-bench-embedded-')
  folders.push(folder)
  return folder
}

if (!flags['suite-only']) await measureService()

// 3. A user's test file, and a new store.
const suiteRoot = flags['suite-root'] ?? ROOT
const suite = join(suiteRoot, 'test/bench/in-memory-suite.ts')
if (suiteRoot !== ROOT) writeFileSync(suite, suiteFor(suiteRoot))
const suiteRuns: { seconds: number; peakPssMb: number; passed: boolean }[] = []
for (let run = 0; run < Number(flags['suite-runs']); run++) {
  const started = performance.now()
  const child = Bun.spawn(['bun', 'test', './test/bench/in-memory-suite.ts'], {
    cwd: suiteRoot,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const pss = sampleTreePss(child.pid, 50)
  const [stderr] = await Promise.all([new Response(child.stderr).text(), child.exited])
  suiteRuns.push({
    seconds: (performance.now() - started) / 1000,
    peakPssMb: pss.stop().peak,
    passed: stderr.includes(' 6 pass'),
  })
}
report.suite = {
  root: suiteRoot,
  runs: suiteRuns.map((run) => ({ ...run, seconds: fixed(run.seconds, 2), peakPssMb: fixed(run.peakPssMb) })),
}
console.log(`six-test file (${suiteRoot}):`, JSON.stringify(report.suite))
const stores: number[] = []
for (let index = 0; index < 21; index++) {
  const started = performance.now()
  const store = await createInMemoryStore()
  stores.push(performance.now() - started)
  await store.close()
}
report.newStoreMs = {
  first: Math.round(stores[0] ?? 0),
  medianAfter: fixed(median(stores.slice(1))),
  maxAfter: fixed(Math.max(...stores.slice(1))),
}
console.log('new store:', JSON.stringify(report.newStoreMs))
report.loadAfter = loadAverage()
for (const folder of folders) rmSync(folder, { recursive: true, force: true })
mkdirSync(join(ROOT, 'test/bench/results'), { recursive: true })
const out = join(
  ROOT,
  'test/bench/results',
  `embedded-default-${report.at as string}.json`.replace(/:/g, '-'),
)
writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
console.log(`written to ${out}`)

// The suite as a checkout from before this engine runs it: one template made per file, then a
// store from it per test (that version's README).
function suiteFor(root: string): string {
  // Checkouts from before the package's named exports import the store by its file.
  const text = readFileSync(join(ROOT, 'test/bench/in-memory-suite.ts'), 'utf8').replace(
    "'plant-store/test-store'",
    "'plant-store/src/test-store.ts'",
  )
  if (!Bun.file(join(root, 'src/store/memory-template.ts')).size) return text
  return text
    .replace(
      "import { createInMemoryStore, type InMemoryStore } from 'plant-store/src/test-store.ts'",
      "import { createInMemoryStore, type InMemoryStore } from 'plant-store/src/test-store.ts'\nimport { createMemoryTemplate } from 'plant-store/src/store/memory-template.ts'\n\nconst template = await createMemoryTemplate()",
    )
    .replace('await createInMemoryStore()', 'await createInMemoryStore({ template })')
}

// 1. and 2.: the service's starts, memory and load.
async function measureService(): Promise<void> {
  // 1. Starts.
  const firstStarts: number[] = []
  const restarts: number[] = []
  for (let run = 0; run < 3; run++) {
    const folder = dataDir()
    const first = await timedStart({ DATA_DIR: folder })
    firstStarts.push(first.ms)
    await first.server.stop('SIGTERM')
    const again = await timedStart({ DATA_DIR: folder })
    restarts.push(again.ms)
    await again.server.stop('SIGTERM')
  }
  report.firstStartMs = firstStarts.map((ms) => Math.round(ms))
  report.restartMs = restarts.map((ms) => Math.round(ms))
  console.log(`first start to /health 200: ${report.firstStartMs} ms; restart: ${report.restartMs} ms`)

  // 2. Load, side by side, on the same seeded plants.
  const seed = Array.from({ length: READERS * PLANTS_PER_READER }, (_, i) => {
    const owner = `reader-${(i + 1) % READERS}`
    return JSON.stringify({
      position: String(i + 1),
      streamId: `plant:${i + 1}:${owner}`,
      streamVersion: 1,
      type: 'PlantCreated',
      schemaVersion: 1,
      data: { id: String(i + 1), name: `plant ${i + 1}`, tag: 'seed' },
      metadata: { owner, requestId: 'seed' },
      recordedAt: '2026-01-01T00:00:00.000Z',
    })
  }).join('\n')
  const embeddedDir = dataDir()
  const database = await createTestDatabase('embedded_bench')
  const seeded: Record<string, string>[] = [
    { DATA_DIR: embeddedDir },
    { DATABASE_URL: database.url, AUTH_JWT_SECRET: SECRET },
  ]
  for (const env of seeded) {
    const imported = await runCli(['events', 'import'], env, `${seed}\n`)
    if (imported.exitCode !== 0) throw new Error(imported.stderr)
  }
  const { server: embedded } = await timedStart({ DATA_DIR: embeddedDir })
  const { server: onPostgres } = await timedStart({ DATABASE_URL: database.url })
  await Bun.sleep(3000)
  const idle: number[] = []
  for (let sample = 0; sample < 10; sample++, await Bun.sleep(300)) idle.push(treePssMb(embedded.process.pid))
  report.idlePssMb = fixed(median(idle))
  console.log(`idle: service + PostgreSQL ${report.idlePssMb} MB (PSS, median of 10 samples)`)

  const fixtures = {
    create: await writeFixture(SECRET, 'writer', 1000),
    page: await writeFixture(SECRET, 'reader', READERS),
  }
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  const wrk = {
    embedded: runsAgainst(embedded, fixtures, Number(flags.connections)),
    postgres: runsAgainst(onPostgres, fixtures, Number(flags.connections)),
  }
  const treeCpuMs = (pids: number[]) =>
    pids.reduce((sum, pid) => {
      try {
        return sum + processCpuMs(pid)
      } catch {
        return sum
      }
    }, 0)

  async function load(side: 'embedded' | 'postgres', mode: 'create' | 'page', seconds: number) {
    const server = side === 'embedded' ? embedded : onPostgres
    const tree = side === 'embedded' ? processTree(server.process.pid) : []
    const treeBefore = treeCpuMs(tree)
    const meter = side === 'postgres' ? await meterCpu(sql, database.name, server.process.pid) : undefined
    const pss = side === 'embedded' ? sampleTreePss(server.process.pid) : undefined
    const result = await wrk[side](mode, seconds)
    const cpuMs = meter
      ? await meter.stop().then(({ processMs, databaseMs }) => processMs + databaseMs)
      : treeCpuMs(tree) - treeBefore
    return {
      requestsPerSecond: result.requestsPerSecond,
      p50Ms: result.p50Ms,
      p99Ms: result.p99Ms,
      errors: result.errors,
      cpuMsPerRequest: cpuMs / result.requests,
      peakPssMb: pss?.stop().peak,
    }
  }

  for (const mode of ['create', 'page'] as const) {
    for (const side of ['embedded', 'postgres'] as const) await load(side, mode, 2)
  }
  type Run = Awaited<ReturnType<typeof load>>
  const runs: Record<string, Run[]> = {}
  for (let round = 0; round < Number(flags.rounds); round++) {
    const sides = round % 2 ? (['postgres', 'embedded'] as const) : (['embedded', 'postgres'] as const)
    for (const mode of ['create', 'page'] as const) {
      for (const side of sides) {
        const run = await load(side, mode, Number(flags.seconds))
        runs[`${side} ${mode}`] = [...(runs[`${side} ${mode}`] ?? []), run]
        console.log(
          `  round ${round + 1} ${side} ${mode}: ${fixed(run.requestsPerSecond, 0)}/s, ${fixed(run.cpuMsPerRequest, 3)} ms CPU a request${run.peakPssMb ? `, peak ${fixed(run.peakPssMb)} MB` : ''} (load ${loadAverage()})`,
        )
      }
    }
  }
  const summary = (key: string) => {
    const list = runs[key] ?? []
    return {
      requestsPerSecond: Math.round(median(list.map((run) => run.requestsPerSecond))),
      p50Ms: fixed(median(list.map((run) => run.p50Ms)), 2),
      p99Ms: fixed(median(list.map((run) => run.p99Ms)), 2),
      cpuMsPerRequest: fixed(median(list.map((run) => run.cpuMsPerRequest)), 3),
      peakPssMb:
        list[0]?.peakPssMb === undefined
          ? undefined
          : fixed(Math.max(...list.map((run) => run.peakPssMb ?? 0))),
      errors: list.reduce((sum, run) => sum + run.errors, 0),
    }
  }
  report.load = Object.fromEntries(Object.keys(runs).map((key) => [key, summary(key)]))
  for (const mode of ['create', 'page']) {
    const ratio =
      summary(`embedded ${mode}`).requestsPerSecond / summary(`postgres ${mode}`).requestsPerSecond
    ;(report as Record<string, unknown>)[`${mode}Ratio`] = fixed(ratio, 2)
    console.log(`${mode}: embedded / machine's PostgreSQL = ${fixed(ratio, 2)}`)
  }
  await embedded.stop('SIGTERM')
  await onPostgres.stop('SIGTERM')
  await sql.end()
  await database.drop()
}
