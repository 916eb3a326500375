// Where the memory of the service's tree goes, under Bun and under Deno (docs/operating.md, Deno):
// the summed PSS of the service and its embedded PostgreSQL, idle 5 s after the start, then 5 s and
// 30 s after a little load (creates, then pages, with wrk); the service's own PSS split into its
// runtime's binary, other files and anonymous memory; the JavaScript heap as /metrics reports it.
//
//   flock /tmp/plant-store-bench.lock bun test/bench/deno-memory.ts [runs] [variant…]
//
// Variants: the names in VARIANTS (default: bun deno).
import { readFileSync, realpathSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { makeDataDirSync } from '../support/data-dir.ts'
import { denoServerCommand } from '../support/deno.ts'
import { processTree, pssMb } from '../support/pss.ts'
import { SERVER_COMMAND, startServer } from '../support/server-process.ts'
import { runsAgainst } from './load.ts'
import { writeFixture } from './tokens.ts'

const SECRET = 'deno-memory-bench-secret-of-at-least-32-bytes'
const [runs = '3', ...named] = process.argv.slice(2)
const variants = named.length ? named : ['bun', 'deno']
// Levers tried on Deno: its flags before the script, and the environment.
const VARIANTS: Record<string, { flags?: string[]; env?: Record<string, string> }> = {
  deno: {},
  'deno-semi-1': { flags: ['--v8-flags=--max-semi-space-size=1'] },
  'deno-semi-2': { flags: ['--v8-flags=--max-semi-space-size=2'] },
  'deno-optimize-for-size': { flags: ['--v8-flags=--optimize-for-size'] },
  'deno-lite': { flags: ['--v8-flags=--lite-mode'] },
  'deno-arenas-2': { env: { MALLOC_ARENA_MAX: '2' } },
  'deno-semi-1-arenas-2': { flags: ['--v8-flags=--max-semi-space-size=1'], env: { MALLOC_ARENA_MAX: '2' } },
}
// The same owners create and then page through what they created.
const owners = await writeFixture(SECRET, 'owner', 100)
const fixtures = { create: owners, page: owners }
const fixed = (value: number) => Number(value.toFixed(1))

// The service's PSS by where its pages come from, in MB; and the resident size of its runtime's
// binary, which is what its PSS would be if no other process ran the same runtime (here the bench
// itself runs on Bun, and other checkouts' tests on either).
function serviceSplit(pid: number) {
  const split = { binary: 0, binaryRss: 0, files: 0, anonymous: 0 }
  const binary = realpathSync(`/proc/${pid}/exe`)
  let kind: 'binary' | 'files' | 'anonymous' = 'anonymous'
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line)
    if (mapping) {
      const path = mapping[1] ?? ''
      kind = !path.startsWith('/') ? 'anonymous' : path === binary ? 'binary' : 'files'
    }
    const pss = /^Pss:\s+(\d+) kB/.exec(line)
    if (pss) split[kind] += Number(pss[1]) / 1024
    const rss = /^Rss:\s+(\d+) kB/.exec(line)
    if (rss && kind === 'binary') split.binaryRss += Number(rss[1]) / 1024
  }
  return split
}

async function heapMb(url: string) {
  const text = await (await fetch(`${url}/metrics`)).text()
  const read = (name: string) =>
    Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN) / 2 ** 20
  return {
    heapTotalMb: fixed(read('nodejs_heap_size_total_bytes')),
    heapUsedMb: fixed(read('nodejs_heap_size_used_bytes')),
  }
}

async function sample(server: { url: string; process: { pid: number } }) {
  const [service = 0, ...postgres] = processTree(server.process.pid)
  const postgresMb = postgres.reduce((sum, pid) => sum + pssMb(pid), 0)
  const serviceMb = pssMb(service)
  const split = serviceSplit(service)
  return {
    treeMb: fixed(serviceMb + postgresMb),
    // The tree as it would be on a machine of its own, the runtime's binary counted whole.
    treeAloneMb: fixed(serviceMb + postgresMb - split.binary + split.binaryRss),
    serviceMb: fixed(serviceMb),
    binaryMb: fixed(split.binary),
    binaryRssMb: fixed(split.binaryRss),
    filesMb: fixed(split.files),
    anonymousMb: fixed(split.anonymous),
    postgresMb: fixed(postgresMb),
    ...(await heapMb(server.url)),
  }
}

async function measure(variant: string) {
  const lever = VARIANTS[variant]
  if (variant !== 'bun' && !lever) throw new Error(`no variant ${variant}: bun, ${Object.keys(VARIANTS)}`)
  const dataDir = makeDataDirSync('plant-store-deno-memory-')
  const command = lever ? denoServerCommand(dataDir, lever.flags) : SERVER_COMMAND
  const server = await startServer({ DATA_DIR: dataDir, AUTH_JWT_SECRET: SECRET, ...lever?.env }, command)
  try {
    await Bun.sleep(5000)
    const idle = await sample(server)
    const wrk = runsAgainst(server, fixtures, 8)
    const create = await wrk('create', 5)
    const page = await wrk('page', 5)
    await Bun.sleep(5000)
    const loaded = await sample(server)
    // V8 gives back what a load left once allocation stays low for a while (its memory reducer).
    await Bun.sleep(25_000)
    const settled = await sample(server)
    const rate = (run: { requestsPerSecond: number; errors: number }) =>
      `${Math.round(run.requestsPerSecond)}/s${run.errors ? ` (${run.errors} errors)` : ''}`
    return {
      variant,
      idle,
      loaded,
      settled,
      creates: rate(create),
      pages: rate(page),
      pageP99Ms: fixed(page.p99Ms),
    }
  } finally {
    await server.stop('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

try {
  for (let run = 0; run < Number(runs); run++)
    for (const variant of variants) console.log(JSON.stringify(await measure(variant)))
} finally {
  rmSync(dirname(owners.tokensFile), { recursive: true, force: true })
}
