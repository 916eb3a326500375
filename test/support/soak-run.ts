import { openPostgres } from '../../src/database/database.ts'
import { median, percentile } from './percentiles.ts'
import { checkProjection, type ProjectionReport } from './projection-check.ts'
import { INTENDED_STATUS, type Kind, kindCycle, type MixState, planRequest } from './request-mix.ts'
import { type MemorySample, sampleResidentMemory, settledRss } from './resident-memory.ts'
import { type Service, startService } from './service.ts'
import { TEST_KEYS } from './test-keys.ts'

export type SoakOptions = {
  seconds: number
  // Requests per second, sent on schedule whether or not earlier ones have been answered.
  rate: number
  warmupSeconds: number
  owners?: number
  // The bound on requests in flight; a tick that finds this many waiting is skipped and counted.
  maxInFlight?: number
  log?: (line: string) => void
}

export type Outcome = { kind: Kind; status: number; ms: number; detail?: string }

export type SoakReport = {
  options: Required<Omit<SoakOptions, 'log'>>
  byKind: Partial<Record<Kind, { statuses: Record<number, number>; p50Ms: number; p99Ms: number }>>
  sent: number
  skipped: number
  latency: { p50Ms: number; p99Ms: number }
  unintended: { count: number; examples: Outcome[] }
  rss: {
    afterWarmupMb: number
    endMb: number
    ratio: number
    peakMb: number
    samples: number
    // The median RSS of each 5 s since the first sample, warm-up included: the shape of the curve.
    trajectoryMb: number[]
  }
  store: ProjectionReport & { acknowledgedCreates: number }
  exitCode: number
}

const REQUEST_BOUND_MS = 20_000
// RSS is compared as the median over this much time, at the end of warm-up and at the end.
export const RSS_WINDOW_MS = 5_000

// Starts the real server on a fresh PostgreSQL database, warms it up with the mixed load, then
// drives the same load for `seconds` while sampling the server's resident memory.
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const service = await startService({ label: 'soak' })
  try {
    return await soak(service, options)
  } finally {
    await service.stop()
  }
}

async function soak(service: Service, options: SoakOptions): Promise<SoakReport> {
  const { seconds, rate, warmupSeconds, owners = 8, maxInFlight = 64, log = () => {} } = options
  const { server } = service
  const memory = sampleResidentMemory(server.process.pid)
  const state: MixState = {
    tokens: await Promise.all(
      Array.from({ length: owners }, (_, n) => service.tokenFor(`soak-${n}`, 24 * 3600)),
    ),
    created: [],
    nextId: 1,
    cursors: [],
  }
  const drive = driver(server.url, state, { rate, maxInFlight, log, rss: () => memory.samples.at(-1)?.rssMb })
  let exitCode = -1
  let report: Omit<SoakReport, 'store' | 'exitCode'>
  try {
    log(`warming up for ${warmupSeconds} s at ${rate} requests/s`)
    const warmup = await drive('warm-up', warmupSeconds)
    const warmedAt = performance.now()
    log(`measuring for ${seconds} s`)
    const measured = await drive('soak', seconds)
    const endedAt = performance.now()
    memory.stop()
    const afterWarmupMb = settledRss(memory.samples, warmedAt, RSS_WINDOW_MS)
    const endMb = settledRss(memory.samples, endedAt, RSS_WINDOW_MS)
    const unintended = [...warmup.outcomes, ...measured.outcomes].filter(
      (o) => o.status !== INTENDED_STATUS[o.kind],
    )
    const measuredMs = measured.outcomes.map((o) => o.ms).sort((a, b) => a - b)
    report = {
      options: { seconds, rate, warmupSeconds, owners, maxInFlight },
      byKind: figuresByKind(measured.outcomes),
      sent: measured.outcomes.length,
      skipped: warmup.skipped + measured.skipped,
      latency: { p50Ms: percentile(measuredMs, 0.5), p99Ms: percentile(measuredMs, 0.99) },
      unintended: { count: unintended.length, examples: unintended.slice(0, 10) },
      rss: {
        afterWarmupMb,
        endMb,
        ratio: endMb / afterWarmupMb,
        peakMb: Math.max(...memory.samples.filter((s) => s.atMs > warmedAt).map((s) => s.rssMb)),
        samples: memory.samples.length,
        trajectoryMb: trajectory(memory.samples),
      },
    }
  } finally {
    memory.stop()
    exitCode = await server.stop('SIGTERM')
  }
  const url = service.databaseUrl ?? ''
  const direct = openPostgres({ keys: TEST_KEYS, url, poolSize: 1, statementTimeoutMs: 30_000 })
  try {
    const store = {
      ...(await checkProjection(direct.db, direct.keyring)),
      acknowledgedCreates: state.created.length,
    }
    return { ...report, store, exitCode }
  } finally {
    await direct.close()
  }
}

type DriverSettings = {
  rate: number
  maxInFlight: number
  log: (line: string) => void
  rss: () => number | undefined
}

// Sends the mixed load on an open-loop schedule: tick n is due at n / rate seconds.
function driver(url: string, state: MixState, { rate, maxInFlight, log, rss }: DriverSettings) {
  const cycle = kindCycle()
  let tick = 0
  return async (phase: string, seconds: number) => {
    const outcomes: Outcome[] = []
    const inFlight = new Set<Promise<void>>()
    let skipped = 0
    const started = performance.now()
    for (let n = 0; n < Math.round(rate * seconds); n++) {
      const wait = started + (n * 1000) / rate - performance.now()
      if (wait > 0) await Bun.sleep(wait)
      if (n > 0 && n % (rate * 10) === 0) {
        log(`${phase} ${n / rate} s: ${outcomes.length} answered, RSS ${rss()?.toFixed(1)} MB`)
      }
      if (inFlight.size >= maxInFlight) {
        skipped++
        continue
      }
      const i = tick++
      const { kind, planned } = planRequest(cycle[i % cycle.length] as Kind, state, i)
      const sending = send(url, kind, planned).then((outcome) => void outcomes.push(outcome))
      inFlight.add(sending)
      void sending.finally(() => inFlight.delete(sending))
    }
    await Promise.all(inFlight)
    return { outcomes, skipped }
  }
}

function trajectory(samples: MemorySample[]): number[] {
  const first = samples[0]?.atMs ?? 0
  const buckets: number[][] = []
  for (const s of samples) {
    const index = Math.floor((s.atMs - first) / RSS_WINDOW_MS)
    buckets[index] = [...(buckets[index] ?? []), s.rssMb]
  }
  return Array.from(buckets, (bucket) => Math.round(median(bucket ?? []) * 10) / 10)
}

async function send(url: string, kind: Kind, planned: ReturnType<typeof planRequest>['planned']) {
  const started = performance.now()
  try {
    const response = await fetch(`${url}${planned.path}`, {
      ...planned.init,
      signal: AbortSignal.timeout(REQUEST_BOUND_MS),
    })
    const body = await response.text()
    const outcome: Outcome = { kind, status: response.status, ms: performance.now() - started }
    if (response.status === INTENDED_STATUS[kind]) planned.onIntended?.(response)
    else outcome.detail = body.slice(0, 300)
    return outcome
  } catch (error) {
    return { kind, status: 0, ms: performance.now() - started, detail: String(error) }
  }
}

function figuresByKind(outcomes: Outcome[]): SoakReport['byKind'] {
  const byKind: SoakReport['byKind'] = {}
  for (const kind of Object.keys(INTENDED_STATUS) as Kind[]) {
    const mine = outcomes.filter((o) => o.kind === kind)
    if (mine.length === 0) continue
    const statuses: Record<number, number> = {}
    for (const o of mine) statuses[o.status] = (statuses[o.status] ?? 0) + 1
    const ms = mine.map((o) => o.ms).sort((a, b) => a - b)
    byKind[kind] = { statuses, p50Ms: percentile(ms, 0.5), p99Ms: percentile(ms, 0.99) }
  }
  return byKind
}
