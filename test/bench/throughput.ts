import type postgres from 'postgres'
import { type LoadResult, runWrk } from './load.ts'
import { median } from './memory.ts'
import { seedEvents } from './seed.ts'
import { type Bench, runSqlCeiling, type SqlResult, startHttpCeiling, startService } from './services.ts'
import { type Fixture, writeFixture } from './tokens.ts'

export type ThroughputOptions = { rounds: number; seconds: number; connections: number }

export type Measured = {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  rssMb: number
  errors: number
}
export type Scenario = { service: Measured; httpCeiling: Measured; sqlCeiling: Measured; rounds: unknown[] }

const READERS = 200
const PLANTS_PER_READER = 50

// POST /plants and GET /plants?limit=20 against the service and both ceilings, round after round
// (A B C, A B C, …) so that noise from other work on the machine falls on all three alike.
export async function measureThroughput(
  bench: Bench,
  databaseUrl: string,
  sql: postgres.Sql,
  options: ThroughputOptions,
): Promise<{ create: Scenario; page: Scenario; statements: Record<string, SqlResult['statements']> }> {
  await seedEvents(sql, 1, READERS * PLANTS_PER_READER, `'reader-' || (i % ${READERS})`)
  const writers = await writeFixture(bench.secret, 'writer', 1000)
  const readers = await writeFixture(bench.secret, 'reader', READERS)
  const service = await startService(bench, databaseUrl)
  const ceiling = await startHttpCeiling(bench)
  let idBase = 0
  const nextBase = () => (idBase += 10_000_000_000)
  const wrk = (url: string, pid: number, mode: 'create' | 'page', fixture: Fixture, seconds: number) =>
    runWrk({
      url,
      pid,
      mode,
      tokensFile: fixture.tokensFile,
      idBase: nextBase(),
      connections: options.connections,
      seconds,
    })
  const sqlCeiling = (mode: 'create' | 'page', fixture: Fixture, seconds: number) =>
    runSqlCeiling({
      mode,
      url: databaseUrl,
      poolSize: bench.poolSize,
      connections: options.connections,
      seconds,
      ownersFile: fixture.ownersFile,
      idBase: nextBase(),
    })
  const statements: Record<string, SqlResult['statements']> = {}
  try {
    const warm = Math.min(3, options.seconds)
    for (const [mode, fixture] of [
      ['create', writers],
      ['page', readers],
    ] as const) {
      await wrk(service.url, service.process.pid, mode, fixture, warm)
      await wrk(ceiling.url, ceiling.process.pid, mode, fixture, warm)
      statements[mode] = (await sqlCeiling(mode, fixture, warm)).statements
    }
    const rounds: Record<
      'create' | 'page',
      { service: LoadResult; httpCeiling: LoadResult; sqlCeiling: LoadResult }[]
    > = { create: [], page: [] }
    for (let round = 1; round <= options.rounds; round++) {
      for (const [mode, fixture] of [
        ['create', writers],
        ['page', readers],
      ] as const) {
        const measured = {
          service: await wrk(service.url, service.process.pid, mode, fixture, options.seconds),
          httpCeiling: await wrk(ceiling.url, ceiling.process.pid, mode, fixture, options.seconds),
          sqlCeiling: await sqlCeiling(mode, fixture, options.seconds),
        }
        rounds[mode].push(measured)
        console.log(
          `  round ${round} ${mode}: service ${measured.service.requestsPerSecond.toFixed(0)}/s, ` +
            `http ceiling ${measured.httpCeiling.requestsPerSecond.toFixed(0)}/s, ` +
            `sql ceiling ${measured.sqlCeiling.requestsPerSecond.toFixed(0)}/s`,
        )
      }
    }
    return { create: summarise(rounds.create), page: summarise(rounds.page), statements }
  } finally {
    await service.stop()
    await ceiling.stop()
  }
}

function summarise(rounds: Record<'service' | 'httpCeiling' | 'sqlCeiling', LoadResult>[]): Scenario {
  const of = (key: 'service' | 'httpCeiling' | 'sqlCeiling'): Measured => ({
    requestsPerSecond: median(rounds.map((round) => round[key].requestsPerSecond)),
    p50Ms: median(rounds.map((round) => round[key].p50Ms)),
    p99Ms: median(rounds.map((round) => round[key].p99Ms)),
    rssMb: Math.max(...rounds.map((round) => round[key].rssMb)),
    errors: rounds.reduce((sum, round) => sum + round[key].errors, 0),
  })
  return {
    service: of('service'),
    httpCeiling: of('httpCeiling'),
    sqlCeiling: of('sqlCeiling'),
    rounds: rounds.map((round) => ({
      service: round.service,
      httpCeiling: round.httpCeiling,
      sqlCeiling: { ...round.sqlCeiling, statements: undefined },
    })),
  }
}
