import type { measureEmbedded } from './embedded.ts'
import type { measureGrowth } from './growth.ts'
import type { Measured, Scenario } from './throughput.ts'

type Results = {
  machine: Record<string, unknown>
  throughput: { create: Scenario; page: Scenario }
  growth?: Awaited<ReturnType<typeof measureGrowth>>
  embedded?: Awaited<ReturnType<typeof measureEmbedded>>
  rebuild?: { exitCode: number; figures?: unknown }
}

type RebuildFigures = {
  events: number
  rebuildEventsPerSecond: number
  ceilingEventsPerSecond: number
  ratioToCeiling: number
  rssPeakMb: number
}

const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '–')

// The table, then each target with the ratio it is judged on (all figures from this one run).
export function printReport({ machine, throughput, growth, embedded, rebuild }: Results) {
  console.log(`\nmachine: ${Object.values(machine).join(' | ')}`)
  console.log(
    '\n| endpoint | measured | req/s | p50 ms | p99 ms | RSS MB | CPU ms/req (process) | CPU ms/req (PostgreSQL) | req/s vs HTTP ceiling | req/s vs database ceiling |',
  )
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  const row = (name: string, label: string, measured: Measured, scenario?: Scenario) => {
    const errors = measured.errors > 0 ? ` (${measured.errors} errors)` : ''
    const ratios = scenario
      ? [
          measured.requestsPerSecond / scenario.httpCeiling.requestsPerSecond,
          measured.requestsPerSecond / scenario.databaseCeiling.requestsPerSecond,
        ]
      : [Number.NaN, Number.NaN]
    console.log(
      `| ${name} | ${label}${errors} | ${fixed(measured.requestsPerSecond, 0)} | ${fixed(measured.p50Ms)} | ${fixed(measured.p99Ms)} | ${fixed(measured.rssMb, 0)} | ${fixed(measured.processCpuMs, 3)} | ${fixed(measured.databaseCpuMs, 3)} | ${ratios.map((ratio) => fixed(ratio)).join(' | ')} |`,
    )
  }
  for (const [name, scenario] of [
    ['POST /plants', throughput.create],
    ['GET /plants?limit=20', throughput.page],
  ] as const) {
    row(name, 'service', scenario.service, scenario)
    row(name, 'HTTP ceiling (no database)', scenario.httpCeiling, scenario)
    row(name, 'database ceiling (pgbench)', scenario.databaseCeiling, scenario)
  }
  if (embedded) {
    row('POST /plants', 'service, embedded PGlite', embedded.create)
    row('GET /plants?limit=20', 'service, embedded PGlite', embedded.page)
  }
  const create = throughput.create
  const page = throughput.page
  const targets: [string, string, boolean][] = [
    [
      'POST req/s ≥ 0.8 × database ceiling',
      fixed(create.service.requestsPerSecond / create.databaseCeiling.requestsPerSecond),
      create.service.requestsPerSecond >= 0.8 * create.databaseCeiling.requestsPerSecond,
    ],
    [
      'POST p99 < 4 × p50',
      `${fixed(create.service.p99Ms / create.service.p50Ms)} ×`,
      create.service.p99Ms < 4 * create.service.p50Ms,
    ],
    [
      'service CPU per create ≤ 0.15 ms',
      `${fixed(create.service.processCpuMs, 3)} ms`,
      create.service.processCpuMs <= 0.15,
    ],
    [
      'PostgreSQL CPU per create ≤ 0.12 ms',
      `${fixed(create.service.databaseCpuMs, 3)} ms`,
      create.service.databaseCpuMs <= 0.12,
    ],
    [
      'GET req/s ≥ 0.4 × HTTP ceiling',
      fixed(page.service.requestsPerSecond / page.httpCeiling.requestsPerSecond),
      page.service.requestsPerSecond >= 0.4 * page.httpCeiling.requestsPerSecond,
    ],
    [
      'RSS under load < 150 MB',
      `${fixed(Math.max(create.service.rssMb, page.service.rssMb), 0)} MB`,
      Math.max(create.service.rssMb, page.service.rssMb) < 150,
    ],
  ]
  if (growth) {
    console.log(
      `\npage p50 with ${growth.page.small.events} events: ${fixed(growth.page.small.p50Ms)} ms (p99 ${fixed(growth.page.small.p99Ms)}); ` +
        `with ${growth.page.large.events}: ${fixed(growth.page.large.p50Ms)} ms (p99 ${fixed(growth.page.large.p99Ms)})`,
    )
    console.log(
      `full listing of ${growth.listing.plants} plants: ${fixed(growth.listing.plantsPerSecond, 0)} plants/s, ` +
        `RSS ${fixed(growth.listing.baselineRssMb, 0)} → ${fixed(growth.listing.peakRssMb, 0)} MB`,
    )
    targets.push(
      ['page p50 at 1M events ≤ 1.2 × at 1k', `${fixed(growth.page.ratio)} ×`, growth.page.ratio <= 1.2],
      ['listing RSS growth < 50 MB', `${fixed(growth.listing.growthMb, 1)} MB`, growth.listing.growthMb < 50],
    )
  }
  const rebuilt = rebuild?.figures as RebuildFigures | undefined
  if (rebuild && !rebuilt) console.log(`\nrebuild bench failed (exit ${rebuild.exitCode})`)
  if (rebuilt) {
    console.log(
      `\nprojection rebuild of ${rebuilt.events} events: ${fixed(rebuilt.rebuildEventsPerSecond, 0)} events/s, ` +
        `set-based ceiling ${fixed(rebuilt.ceilingEventsPerSecond, 0)} events/s (ratio ${fixed(rebuilt.ratioToCeiling)}), ` +
        `peak RSS ${fixed(rebuilt.rssPeakMb, 0)} MB`,
    )
    targets.push([
      'rebuild ≥ 0.5 × set-based ceiling',
      fixed(rebuilt.ratioToCeiling),
      rebuilt.ratioToCeiling >= 0.5,
    ])
  }
  console.log('\n| target | measured | met |\n|---|---:|---|')
  for (const [target, measured, met] of targets)
    console.log(`| ${target} | ${measured} | ${met ? 'yes' : 'NO'} |`)
}
