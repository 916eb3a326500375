import type { Measured, Scenario, ScenarioName } from './throughput.ts'

// A target row: what is promised, what was measured (with the ceiling's own figure beside it),
// and whether it is met (undefined: reported, no target).
export type TargetRow = [target: string, measured: string, met: boolean | undefined]

type Throughput = Partial<Record<ScenarioName, Scenario>>

const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '–')
const requestsPerSecond = (
  scenario: Scenario | undefined,
  side: 'service' | 'crudPeer' | 'databaseCeiling',
) => scenario?.[side]?.requestsPerSecond ?? Number.NaN

// The service against the CRUD peer on the same stack, in one run: each ratio with the database
// ceiling's own ratio to the peer beside it (what the database allows any design at most).
function againstPeer(name: string, scenario: Scenario | undefined, least: number | undefined): TargetRow[] {
  if (!scenario?.service || !scenario.crudPeer) return []
  const ratio = requestsPerSecond(scenario, 'service') / requestsPerSecond(scenario, 'crudPeer')
  const ceiling = requestsPerSecond(scenario, 'databaseCeiling') / requestsPerSecond(scenario, 'crudPeer')
  const measured = `${fixed(ratio)} (database ceiling: ${fixed(ceiling)})`
  return [
    [
      least === undefined ? name : `${name} ≥ ${least} × CRUD peer`,
      measured,
      least === undefined ? undefined : ratio >= least,
    ],
  ]
}

// CPU of one request, service and PostgreSQL; for a ceiling, the HTTP ceiling's process and the
// database ceiling's backends.
const cpu = (measured: Measured | undefined) =>
  measured ? measured.processCpuMs + measured.databaseCpuMs : Number.NaN
const ceilingCpu = (scenario: Scenario | undefined) =>
  (scenario?.httpCeiling?.processCpuMs ?? Number.NaN) +
  (scenario?.databaseCeiling?.databaseCpuMs ?? Number.NaN)

// A 304 beside a page at as many connections: what the service's revalidation costs, and what the
// ceilings' 304 (HTTP ceiling plus the two index probes) costs beside their page.
function revalidation(
  label: string,
  revalidate: Scenario | undefined,
  page: Scenario | undefined,
): TargetRow[] {
  if (!revalidate?.service || !page?.service) return []
  const share = cpu(revalidate.service) / cpu(page.service)
  const ceiling = ceilingCpu(revalidate) / ceilingCpu(page)
  return [
    [
      `CPU of a 304 ≤ 1/4 of a page (service + PostgreSQL), ${label}`,
      `${fixed(cpu(revalidate.service), 3)} vs ${fixed(cpu(page.service), 3)} ms: ${fixed(share)} (ceilings: ${fixed(ceiling)})`,
      share <= 0.25,
    ],
  ]
}

export function peerTargets(throughput: Throughput, connections: unknown): TargetRow[] {
  return [
    ...againstPeer(`GET req/s at ${connections} connections`, throughput.page, 1.2),
    ...againstPeer('GET req/s at 4 connections', throughput.pageFew, 1.2),
    ...againstPeer('GET req/s at 1 connection', throughput.pageOne, undefined),
    ...revalidation(`${connections} connections`, throughput.revalidate, throughput.page),
    ...revalidation('4 connections', throughput.revalidateFew, throughput.pageFew),
    ...revalidation('1 connection', throughput.revalidateOne, throughput.pageOne),
    ...againstPeer(`POST req/s at ${connections} connections`, throughput.create, 1.5),
    ...againstPeer('POST req/s at 4 connections', throughput.createFew, 0.8),
    ...againstPeer('POST req/s at 1 connection', throughput.createOne, 0.8),
  ]
}
