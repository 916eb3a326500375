import type postgres from 'postgres'
import { meterCpu } from './cpu.ts'
import { type LoadResult, runWrk } from './load.ts'
import { median } from './memory.ts'
import { runPgbench } from './pgbench.ts'
import { seedEvents } from './seed.ts'
import { type Bench, startHttpCeiling, startService } from './services.ts'
import { type Fixture, writeFixture } from './tokens.ts'

export type ThroughputOptions = { rounds: number; seconds: number; connections: number }

export type Measured = {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  rssMb: number
  errors: number
  // CPU time per request, in ms: of the process serving it, and of the PostgreSQL backends.
  processCpuMs: number
  databaseCpuMs: number
}
export type Scenario = {
  service: Measured
  httpCeiling: Measured
  databaseCeiling: Measured
  rounds: unknown[]
}

const READERS = 200
const PLANTS_PER_READER = 50
type Mode = 'create' | 'page'
type Side = 'service' | 'httpCeiling' | 'databaseCeiling'

// POST /plants and GET /plants?limit=20 against the service and both ceilings, round after round
// (A B C, A B C, …) so that noise from other work on the machine falls on all three alike.
export async function measureThroughput(
  bench: Bench,
  databaseUrl: string,
  sql: postgres.Sql,
  options: ThroughputOptions,
): Promise<{ create: Scenario; page: Scenario }> {
  await seedEvents(sql, 1, READERS * PLANTS_PER_READER, `'reader-' || (i % ${READERS})`)
  const fixtures = {
    create: await writeFixture(bench.secret, 'writer', 1000),
    page: await writeFixture(bench.secret, 'reader', READERS),
  }
  const database = new URL(databaseUrl).pathname.slice(1)
  const service = await startService(bench, databaseUrl)
  const ceiling = await startHttpCeiling(bench)
  let idBase = 0
  const wrk = async (url: string, pid: number, mode: Mode, fixture: Fixture, seconds: number) => {
    const meter = await meterCpu(sql, database, pid)
    idBase += 10_000_000_000
    const load = await runWrk({
      url,
      pid,
      mode,
      tokensFile: fixture.tokensFile,
      idBase,
      connections: options.connections,
      seconds,
    })
    return withCpu(load, await meter.stop())
  }
  const run = async (side: Side, mode: Mode, seconds: number): Promise<Measured> => {
    if (side === 'service') return wrk(service.url, service.process.pid, mode, fixtures[mode], seconds)
    if (side === 'httpCeiling') return wrk(ceiling.url, ceiling.process.pid, mode, fixtures[mode], seconds)
    const result = await runPgbench({ mode, url: databaseUrl, clients: bench.poolSize, seconds }, sql)
    return { ...result, rssMb: Number.NaN, processCpuMs: result.clientCpuMs }
  }
  const sides: Side[] = ['service', 'httpCeiling', 'databaseCeiling']
  try {
    const warm = Math.min(3, options.seconds)
    for (const mode of ['create', 'page'] as const) for (const side of sides) await run(side, mode, warm)
    const rounds: Record<Mode, Record<Side, Measured>[]> = { create: [], page: [] }
    for (let round = 1; round <= options.rounds; round++) {
      for (const mode of ['create', 'page'] as const) {
        const measured = {} as Record<Side, Measured>
        for (const side of sides) measured[side] = await run(side, mode, options.seconds)
        rounds[mode].push(measured)
        console.log(
          `  round ${round} ${mode}: ` +
            sides.map((side) => `${side} ${measured[side].requestsPerSecond.toFixed(0)}/s`).join(', '),
        )
      }
    }
    return { create: summarise(rounds.create), page: summarise(rounds.page) }
  } finally {
    await service.stop()
    await ceiling.stop()
  }
}

export function withCpu(
  { requests, ...load }: LoadResult,
  cpu: { processMs: number; databaseMs: number },
): Measured {
  return { ...load, processCpuMs: cpu.processMs / requests, databaseCpuMs: cpu.databaseMs / requests }
}

// Medians over the rounds (the peak for memory, the sum for errors), side by side.
export function summarise<Key extends string>(
  rounds: Record<Key, Measured>[],
): Record<Key, Measured> & { rounds: unknown[] } {
  const keys = Object.keys(rounds[0] ?? {}) as Key[]
  const of = (key: Key): Measured => {
    const medianOf = (field: keyof Measured) => median(rounds.map((round) => round[key][field]))
    return {
      requestsPerSecond: medianOf('requestsPerSecond'),
      p50Ms: medianOf('p50Ms'),
      p99Ms: medianOf('p99Ms'),
      rssMb: Math.max(...rounds.map((round) => round[key].rssMb)),
      errors: rounds.reduce((sum, round) => sum + round[key].errors, 0),
      processCpuMs: medianOf('processCpuMs'),
      databaseCpuMs: medianOf('databaseCpuMs'),
    }
  }
  const summary = Object.fromEntries(keys.map((key) => [key, of(key)])) as Record<Key, Measured>
  return { ...summary, rounds }
}
