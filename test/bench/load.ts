import { existsSync } from 'node:fs'
import { median } from '../support/percentiles.ts'
import { peakResidentMemory } from '../support/resident-memory.ts'

// One load run: throughput, latency percentiles and the target's resident memory meanwhile.
export type LoadResult = {
  requests: number
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  // Peak resident set of the process under test while the load ran, in MB.
  rssMb: number
  errors: number
}

export type WrkRun = {
  url: string
  mode: 'create' | 'page' | 'revalidate'
  tokensFile: string
  // revalidate: each token's ETag, a line each in the same order.
  tagsFile?: string
  idBase: number
  connections: number
  seconds: number
  pid: number
}

const SCRIPT = new URL('./load.lua', import.meta.url).pathname

// wrk comes from Debian's packages; a fresh machine gets it on first use.
export function ensureWrk(): void {
  if (Bun.which('wrk')) return
  console.log('wrk is missing: installing it with apt-get')
  const sudo = process.getuid?.() === 0 || !existsSync('/usr/bin/sudo') ? [] : ['sudo']
  for (const command of [
    ['apt-get', 'update'],
    ['apt-get', 'install', '-y', 'wrk'],
  ]) {
    const result = Bun.spawnSync([...sudo, ...command], { stdout: 'inherit', stderr: 'inherit' })
    if (result.exitCode !== 0) throw new Error(`${command.join(' ')} failed: install wrk and run again`)
  }
}

export async function runWrk(run: WrkRun): Promise<LoadResult> {
  const memory = peakResidentMemory(run.pid)
  const child = Bun.spawn(
    [
      'wrk',
      '-t1',
      `-c${run.connections}`,
      `-d${run.seconds}s`,
      '--timeout',
      '10s',
      '-s',
      SCRIPT,
      run.url,
      '--',
      run.mode,
      run.tokensFile,
      String(run.idBase),
      ...(run.tagsFile ? [run.tagsFile] : []),
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  const rssMb = memory.stop()
  const line = stdout.split('\n').find((text) => text.startsWith('{"requests"'))
  if (exitCode !== 0 || !line) throw new Error(`wrk failed (${exitCode}): ${stderr}${stdout}`)
  const summary = JSON.parse(line) as {
    requests: number
    durationUs: number
    p50Us: number
    p99Us: number
    errors: number
    non2xx: number
  }
  return {
    requests: summary.requests,
    requestsPerSecond: summary.requests / (summary.durationUs / 1e6),
    p50Ms: summary.p50Us / 1000,
    p99Ms: summary.p99Us / 1000,
    rssMb,
    errors: summary.errors + summary.non2xx,
  }
}

// A scenario's load in short: its rate, latencies and errors.
export type Load = { requestsPerSecond: number; p50Ms: number; p99Ms: number; errors: number }

// The median round of several, each figure on its own; the errors of all rounds summed.
export function medianLoad(loads: Load[]): Load {
  return {
    requestsPerSecond: median(loads.map((load) => load.requestsPerSecond)),
    p50Ms: median(loads.map((load) => load.p50Ms)),
    p99Ms: median(loads.map((load) => load.p99Ms)),
    errors: loads.reduce((sum, load) => sum + load.errors, 0),
  }
}

// Runs of wrk against a server, in a mode as the owners of that mode's tokens file: each run's ids
// above the last's, so that no create repeats one.
export function runsAgainst(
  server: { url: string; process: { pid: number } },
  tokensFiles: Partial<Record<WrkRun['mode'], { tokensFile: string }>>,
  connections: number,
): (mode: WrkRun['mode'], seconds: number) => Promise<LoadResult> {
  let idBase = 0
  return (mode, seconds) => {
    idBase += 10_000_000_000
    const tokensFile = tokensFiles[mode]?.tokensFile ?? ''
    return runWrk({
      url: server.url,
      pid: server.process.pid,
      mode,
      tokensFile,
      idBase,
      connections,
      seconds,
    })
  }
}

// Runs of creates against a server, as the owners of `tokensFile`.
export function createRuns(
  server: { url: string; process: { pid: number } },
  tokensFile: string,
  connections: number,
): (seconds: number) => Promise<LoadResult> {
  const run = runsAgainst(server, { create: { tokensFile } }, connections)
  return (seconds) => run('create', seconds)
}
