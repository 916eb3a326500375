// The test store as a user meets it (docs/testing.md, Installing it), measured:
//   bun test/bench/test-store-open.ts [--runs 3] [--stores 11]
// The repository is packed and installed in a scratch project outside it, as the doc says. Then,
// each run in a temporary folder of its own (TMPDIR), so that the first is cold (no cached
// cluster: what a user's first test file on a machine meets) and the rest warm:
// - the six-test file (in-memory-suite.ts, importing the package): its wall time and the peak
//   summed PSS of `bun test` and its PostgreSQL;
// - a process opening `--stores` stores one after another: the first (which starts the server)
//   and the median of the others.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { median } from '../support/percentiles.ts'
import { sampleTreePss } from '../support/pss.ts'

const { values: flags } = parseArgs({
  options: { runs: { type: 'string', default: '3' }, stores: { type: 'string', default: '11' } },
})
const ROOT = new URL('../..', import.meta.url).pathname
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

// Readable by PostgreSQL's own user, which runs the binaries in node_modules when this runs as root.
const scratch = mkdtempSync(join(tmpdir(), 'plant-store-bench-user-'))
chmodSync(scratch, 0o755)
const project = join(scratch, 'project')
mkdirSync(project)
writeFileSync(join(project, 'package.json'), '{ "name": "bench-user", "private": true }\n')
await Bun.$`bun pm pack --quiet --destination ${scratch}`.cwd(ROOT).quiet()
await Bun.$`bun add -d ${join(scratch, 'plant-store-1.0.0.tgz')} @elysiajs/eden`.cwd(project).quiet()
writeFileSync(join(project, 'six.test.ts'), readFileSync(join(ROOT, 'test/bench/in-memory-suite.ts'), 'utf8'))
writeFileSync(
  join(project, 'open.ts'),
  `import { createInMemoryStore } from 'plant-store/test-store'
const times = []
for (let i = 0; i < ${Number(flags.stores)}; i++) {
  const started = performance.now()
  const store = await createInMemoryStore()
  times.push(performance.now() - started)
  await store.close()
}
console.log(JSON.stringify(times))
`,
)

type Run = {
  kind: 'cold' | 'warm'
  suiteSeconds: number
  peakPssMb: number
  passed: boolean
  firstMs: number
  laterMedianMs: number
}
const runs: Run[] = []
let env: Record<string, string | undefined> = {}
let temps = 0
// A TMPDIR never used before: no cached cluster in it. (Emptying one would race the watchdogs of
// the runs before, which remove their servers' folders as they go.)
const freshTemp = () => {
  const temp = join(scratch, `tmp-${temps++}`)
  mkdirSync(temp)
  chmodSync(temp, 0o1777)
  env = { ...process.env, TMPDIR: temp }
}

async function timedSuite() {
  const started = performance.now()
  const suite = Bun.spawn(['bun', 'test', './six.test.ts'], {
    cwd: project,
    env,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const pss = sampleTreePss(suite.pid, 20)
  const [stderr] = await Promise.all([new Response(suite.stderr).text(), suite.exited])
  return {
    suiteSeconds: (performance.now() - started) / 1000,
    peakPssMb: pss.stop().peak,
    passed: stderr.includes(' 6 pass'),
  }
}

async function openTimes() {
  const times = JSON.parse(await Bun.$`bun open.ts`.cwd(project).env(env).text()) as number[]
  return { firstMs: times[0] ?? Number.NaN, laterMedianMs: median(times.slice(1)) }
}

// Each round: cold (an empty TMPDIR before the suite and before the stores), then warm (the
// cluster the cold stores cached, as a user's second test file meets it).
for (let round = 0; round < Number(flags.runs); round++) {
  freshTemp()
  const coldSuite = await timedSuite()
  freshTemp()
  runs.push({ kind: 'cold', ...coldSuite, ...(await openTimes()) })
  runs.push({ kind: 'warm', ...(await timedSuite()), ...(await openTimes()) })
}
rmSync(scratch, { recursive: true, force: true })

const fixed = (value: number, digits = 0) => value.toFixed(digits)
for (const kind of ['cold', 'warm'] as const) {
  const of = runs.filter((run) => run.kind === kind)
  console.log(
    `${kind}: six-test file ${of.map((run) => fixed(run.suiteSeconds, 2)).join(', ')} s` +
      ` (peak PSS ${of.map((run) => fixed(run.peakPssMb)).join(', ')} MB; all passed: ${of.every((run) => run.passed)});` +
      ` first store ${of.map((run) => fixed(run.firstMs)).join(', ')} ms,` +
      ` later stores median ${of.map((run) => fixed(run.laterMedianMs, 1)).join(', ')} ms`,
  )
}
console.log(`load average ${loadAverage()}`)
