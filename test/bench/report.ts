import type { measureEmbedded } from './embedded.ts'
import type { measureGrowth } from './growth.ts'
import { peerTargets, type TargetRow } from './peer-targets.ts'
import type { Measured, Scenario, ScenarioName } from './throughput.ts'

type Results = {
  at: string
  commit: string
  machine: Record<string, unknown>
  flags?: Record<string, unknown>
  throughput: Partial<Record<ScenarioName, Scenario>>
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

// The embedded default's POST before group commit (as the README of the version before it recorded it).
const EMBEDDED_POST_BEFORE = 812

const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '–')
const NOT_MEASURED: Measured = {
  requestsPerSecond: Number.NaN,
  p50Ms: Number.NaN,
  p99Ms: Number.NaN,
  rssMb: Number.NaN,
  errors: 0,
  processCpuMs: Number.NaN,
  databaseCpuMs: Number.NaN,
}
const sideOf = (scenario: Scenario | undefined, side: keyof Omit<Scenario, 'rounds'>) =>
  scenario?.[side] ?? NOT_MEASURED

// The table, then each target with the ratio it is judged on (all figures from this one run).
export function printReport({ at, commit, machine, flags, throughput, growth, embedded, rebuild }: Results) {
  console.log(`\n${at}, commit ${commit}; machine: ${Object.values(machine).join(' | ')}`)
  console.log(
    '\n| endpoint | measured | req/s | p50 ms | p99 ms | RSS MB | CPU ms/req (process) | CPU ms/req (PostgreSQL) | req/s vs HTTP ceiling | req/s vs database ceiling |',
  )
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  const row = (name: string, label: string, measured: Measured, scenario?: Scenario) => {
    const errors = measured.errors > 0 ? ` (${measured.errors} errors)` : ''
    const ratios = [
      measured.requestsPerSecond / sideOf(scenario, 'httpCeiling').requestsPerSecond,
      measured.requestsPerSecond / sideOf(scenario, 'databaseCeiling').requestsPerSecond,
    ]
    console.log(
      `| ${name} | ${label}${errors} | ${fixed(measured.requestsPerSecond, 0)} | ${fixed(measured.p50Ms)} | ${fixed(measured.p99Ms)} | ${fixed(measured.rssMb, 0)} | ${fixed(measured.processCpuMs, 3)} | ${fixed(measured.databaseCpuMs, 3)} | ${ratios.map((ratio) => fixed(ratio)).join(' | ')} |`,
    )
  }
  const labels = (mode: 'create' | 'page' | 'version'): [keyof Omit<Scenario, 'rounds'>, string][] => [
    ['service', 'service'],
    [
      'crudPeer',
      mode === 'create'
        ? 'CRUD peer (one INSERT … ON CONFLICT DO NOTHING, no events)'
        : 'CRUD peer (one keyset query)',
    ],
    ['httpCeiling', 'HTTP ceiling (no database)'],
    [
      'databaseCeiling',
      {
        create: 'database ceiling (pgbench, a create per transaction)',
        page: 'database ceiling (pgbench, the page query)',
        version: "database ceiling (pgbench, the owner's head and generation)",
      }[mode],
    ],
    [
      'batchedCeiling',
      `batched database ceiling (pgbench, ${flags?.['ceiling-batch'] ?? 'N'} creates per transaction)`,
    ],
  ]
  const connections = flags?.connections ?? 32
  for (const [name, scenario, mode] of [
    [`POST /plants, ${connections} connections`, throughput.create, 'create'],
    [`GET /plants?limit=20, ${connections} connections`, throughput.page, 'page'],
    ['POST /plants, 4 connections', throughput.createFew, 'create'],
    ['POST /plants, 1 connection', throughput.createOne, 'create'],
    ['GET /plants?limit=20, 4 connections', throughput.pageFew, 'page'],
    ['GET /plants?limit=20, 1 connection', throughput.pageOne, 'page'],
    [`GET with a current If-None-Match (304), ${connections} connections`, throughput.revalidate, 'version'],
    ['GET with a current If-None-Match (304), 4 connections', throughput.revalidateFew, 'version'],
    ['GET with a current If-None-Match (304), 1 connection', throughput.revalidateOne, 'version'],
  ] as const) {
    for (const [side, label] of labels(mode)) {
      const measured = scenario?.[side]
      if (measured) row(name, label, measured, scenario)
    }
  }
  if (embedded) {
    row('POST /plants', 'service, embedded default', embedded.create)
    row('GET /plants?limit=20', 'service, embedded default', embedded.page)
  }
  const create = sideOf(throughput.create, 'service')
  const page = sideOf(throughput.page, 'service')
  const targets: TargetRow[] = [...peerTargets(throughput, connections)]
  if (throughput.create) {
    const one = (side: 'service' | 'crudPeer') => sideOf(throughput.createOne, side)
    targets.push(
      ['POST p99 < 4 × p50', `${fixed(create.p99Ms / create.p50Ms)} ×`, create.p99Ms < 4 * create.p50Ms],
      [
        'POST p50 and p99 at 1 connection beside the CRUD peer (a lone create waits for nothing)',
        `${fixed(one('service').p50Ms)} and ${fixed(one('service').p99Ms)} ms (CRUD peer ${fixed(one('crudPeer').p50Ms)} and ${fixed(one('crudPeer').p99Ms)} ms)`,
        undefined,
      ],
    )
  }
  if (throughput.create?.databaseCeiling) {
    const databaseCeiling = sideOf(throughput.create, 'databaseCeiling')
    targets.push([
      'POST req/s ≥ 0.8 × database ceiling',
      fixed(create.requestsPerSecond / databaseCeiling.requestsPerSecond),
      create.requestsPerSecond >= 0.8 * databaseCeiling.requestsPerSecond,
    ])
  }
  if (throughput.page?.httpCeiling) {
    targets.push([
      'GET req/s ≥ 0.4 × HTTP ceiling',
      fixed(page.requestsPerSecond / sideOf(throughput.page, 'httpCeiling').requestsPerSecond),
      page.requestsPerSecond >= 0.4 * sideOf(throughput.page, 'httpCeiling').requestsPerSecond,
    ])
  }
  const peakRss = Math.max(...Object.values(throughput).map((scenario) => scenario?.service?.rssMb ?? 0))
  targets.push(['RSS under load < 150 MB', `${fixed(peakRss, 0)} MB`, peakRss < 150])
  if (embedded) {
    targets.push([
      `embedded POST req/s ≥ 2 × ${EMBEDDED_POST_BEFORE}`,
      `${fixed(embedded.create.requestsPerSecond / EMBEDDED_POST_BEFORE)} ×`,
      embedded.create.requestsPerSecond >= 2 * EMBEDDED_POST_BEFORE,
    ])
  }
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
    console.log(`| ${target} | ${measured} | ${met === undefined ? '–' : met ? 'yes' : 'NO'} |`)
}
