import type { measureGrowth } from './growth.ts'
import type { Measured, Scenario } from './throughput.ts'

type Results = {
  machine: Record<string, unknown>
  throughput: { create: Scenario; page: Scenario }
  growth?: Awaited<ReturnType<typeof measureGrowth>>
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
export function printReport({ machine, throughput, growth, rebuild }: Results) {
  console.log(`\nmachine: ${Object.values(machine).join(' | ')}`)
  console.log(
    '\n| endpoint | target | req/s | p50 ms | p99 ms | RSS MB | req/s vs HTTP | req/s vs SQL | p50 vs HTTP | p50 vs SQL |',
  )
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const [name, scenario] of [
    ['POST /plants', throughput.create],
    ['GET /plants?limit=20', throughput.page],
  ] as const) {
    const row = (label: string, measured: Measured) => {
      const ratios = [
        measured.requestsPerSecond / scenario.httpCeiling.requestsPerSecond,
        measured.requestsPerSecond / scenario.sqlCeiling.requestsPerSecond,
        measured.p50Ms / scenario.httpCeiling.p50Ms,
        measured.p50Ms / scenario.sqlCeiling.p50Ms,
      ]
      const errors = measured.errors > 0 ? ` (${measured.errors} errors)` : ''
      console.log(
        `| ${name} | ${label}${errors} | ${fixed(measured.requestsPerSecond, 0)} | ${fixed(measured.p50Ms)} | ${fixed(measured.p99Ms)} | ${fixed(measured.rssMb, 0)} | ${ratios.map((ratio) => fixed(ratio)).join(' | ')} |`,
      )
    }
    row('service', scenario.service)
    row('HTTP ceiling', scenario.httpCeiling)
    row('SQL ceiling', scenario.sqlCeiling)
  }
  const create = throughput.create
  const page = throughput.page
  const targets: [string, string, boolean][] = [
    [
      'POST req/s ≥ 0.7 × SQL ceiling',
      fixed(create.service.requestsPerSecond / create.sqlCeiling.requestsPerSecond),
      create.service.requestsPerSecond >= 0.7 * create.sqlCeiling.requestsPerSecond,
    ],
    [
      'POST p99 < 4 × p50',
      `${fixed(create.service.p99Ms / create.service.p50Ms)} ×`,
      create.service.p99Ms < 4 * create.service.p50Ms,
    ],
    [
      'GET req/s ≥ 0.35 × HTTP ceiling',
      fixed(page.service.requestsPerSecond / page.httpCeiling.requestsPerSecond),
      page.service.requestsPerSecond >= 0.35 * page.httpCeiling.requestsPerSecond,
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
  if (rebuilt)
    console.log(
      `\nprojection rebuild of ${rebuilt.events} events: ${fixed(rebuilt.rebuildEventsPerSecond, 0)} events/s, ` +
        `set-based ceiling ${fixed(rebuilt.ceilingEventsPerSecond, 0)} events/s (ratio ${fixed(rebuilt.ratioToCeiling)}), ` +
        `peak RSS ${fixed(rebuilt.rssPeakMb, 0)} MB`,
    )
  console.log('\n| target | measured | met |\n|---|---:|---|')
  for (const [target, measured, met] of targets)
    console.log(`| ${target} | ${measured} | ${met ? 'yes' : 'NO'} |`)
}
