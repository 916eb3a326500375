import type postgres from 'postgres'
import { median } from '../support/percentiles.ts'
import { meterCpu } from './cpu.ts'
import { type LoadResult, runWrk, type WrkRun } from './load.ts'
import { runPgbench, seedCeilingOwners } from './pgbench.ts'
import { seedTestEvents } from './seed.ts'
import { type Bench, startCrudPeer, startHttpCeiling, startService } from './services.ts'
import { writeFixture, writeTagsFile } from './tokens.ts'

export type ThroughputOptions = {
  rounds: number
  seconds: number
  connections: number
  // Creates per transaction in the batched database ceiling.
  ceilingBatch: number
  // The scenarios to measure; all unless given.
  scenarios?: ScenarioName[]
  // The service and the CRUD peer alone, no ceilings (`bun run bench --peer-only`).
  peerOnly?: boolean
}

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

type Side = 'service' | 'crudPeer' | 'httpCeiling' | 'databaseCeiling' | 'batchedCeiling'
export type Scenario = Partial<Record<Side, Measured>> & { rounds: unknown[] }

// Each scenario: what it loads, with how many connections, and the sides measured on it.
type ScenarioPlan = { mode: WrkRun['mode']; connections: number; sides: Side[] }
export type ScenarioName =
  | 'create'
  | 'page'
  | 'createFew'
  | 'createOne'
  | 'pageFew'
  | 'pageOne'
  | 'revalidate'
  | 'revalidateFew'
  | 'revalidateOne'

// Creates and pages at 32, 4 and 1 connections: what is judged against the CRUD peer.
export const PEER_SCENARIOS: ScenarioName[] = [
  'create',
  'page',
  'createFew',
  'createOne',
  'pageFew',
  'pageOne',
]

export const READ_SCENARIOS: ScenarioName[] = [
  'page',
  'pageFew',
  'pageOne',
  'revalidate',
  'revalidateFew',
  'revalidateOne',
]

const READERS = 200
const PLANTS_PER_READER = 50

// POST /plants and GET /plants?limit=20 against the service, the CRUD peer and the ceilings, round
// after round (A B C, A B C, …) so that noise from other work on the machine falls on all alike;
// then POST and GET at 4 connections and at 1, the service beside the CRUD peer; then 304s at 32, 4
// and 1, beside the HTTP ceiling's 304 and the database's least read for one.
export async function measureThroughput(
  bench: Bench,
  databaseUrl: string,
  sql: postgres.Sql,
  options: ThroughputOptions,
): Promise<Partial<Record<ScenarioName, Scenario>>> {
  await seedTestEvents(sql, 1, READERS * PLANTS_PER_READER, `'reader-' || (i % ${READERS})`)
  // The CRUD peer lists the same plants from its own table.
  await sql`create table if not exists crud_plants (
    owner text not null, id bigint not null, name text not null, tag text, primary key (owner, id))`
  await sql`insert into crud_plants select owner, id, name, tag from plants on conflict do nothing`
  await sql`analyze`
  const readers = await writeFixture(bench.secret, 'reader', READERS)
  const tagsFile = await writeTagsFile(sql, readers)
  const fixtures = {
    create: await writeFixture(bench.secret, 'writer', 1000),
    page: readers,
    revalidate: readers,
  }
  const plans: Record<ScenarioName, ScenarioPlan> = {
    create: {
      mode: 'create',
      connections: options.connections,
      sides: ['service', 'crudPeer', 'httpCeiling', 'databaseCeiling', 'batchedCeiling'],
    },
    page: {
      mode: 'page',
      connections: options.connections,
      sides: ['service', 'crudPeer', 'httpCeiling', 'databaseCeiling'],
    },
    // With the database's own ceiling at as many clients as connections: what one create per
    // transaction allows when there is little or nothing to batch.
    createFew: { mode: 'create', connections: 4, sides: ['service', 'crudPeer', 'databaseCeiling'] },
    createOne: { mode: 'create', connections: 1, sides: ['service', 'crudPeer', 'databaseCeiling'] },
    pageFew: {
      mode: 'page',
      connections: 4,
      sides: ['service', 'crudPeer', 'httpCeiling', 'databaseCeiling'],
    },
    pageOne: {
      mode: 'page',
      connections: 1,
      sides: ['service', 'crudPeer', 'httpCeiling', 'databaseCeiling'],
    },
    // The same page asked again with its ETag: 304s (load.lua keeps each owner's tag). The
    // ceilings: the HTTP ceiling's 304, and the two index probes of the owner's version.
    revalidate: {
      mode: 'revalidate',
      connections: options.connections,
      sides: ['service', 'httpCeiling', 'databaseCeiling'],
    },
    revalidateFew: {
      mode: 'revalidate',
      connections: 4,
      sides: ['service', 'httpCeiling', 'databaseCeiling'],
    },
    revalidateOne: {
      mode: 'revalidate',
      connections: 1,
      sides: ['service', 'httpCeiling', 'databaseCeiling'],
    },
  }
  await seedCeilingOwners(sql)
  const database = new URL(databaseUrl).pathname.slice(1)
  const service = await startService(bench, databaseUrl)
  const crudPeer = await startCrudPeer(bench, databaseUrl)
  const ceiling = await startHttpCeiling(bench)
  const servers = { service, crudPeer, httpCeiling: ceiling }
  let idBase = 0
  const run = async (side: Side, plan: ScenarioPlan, seconds: number): Promise<Measured> => {
    if (side === 'databaseCeiling' || side === 'batchedCeiling') {
      const batch = side === 'batchedCeiling' ? options.ceilingBatch : 1
      const result = await runPgbench(
        {
          mode: batch > 1 ? 'createBatch' : plan.mode === 'revalidate' ? 'version' : plan.mode,
          batch,
          url: databaseUrl,
          // The batched ceiling has as many creates in flight as the load has connections.
          clients:
            batch > 1
              ? Math.max(1, Math.round(plan.connections / batch))
              : Math.min(bench.poolSize, plan.connections),
          seconds,
        },
        sql,
      )
      // The ceilings write tens of thousands of rows the service's statements, planned once per
      // connection, never saw: ANALYZE, as autovacuum would (this machine's server runs without
      // it), so that they are planned again for the tables as they now are.
      if (plan.mode === 'create') await sql`analyze`
      return { ...result, rssMb: Number.NaN, processCpuMs: result.clientCpuMs }
    }
    const server = servers[side]
    const meter = await meterCpu(sql, database, server.process.pid)
    idBase += 10_000_000_000
    const load = await runWrk({
      url: server.url,
      pid: server.process.pid,
      mode: plan.mode,
      tokensFile: fixtures[plan.mode].tokensFile,
      tagsFile: plan.mode === 'revalidate' ? tagsFile : undefined,
      idBase,
      connections: plan.connections,
      seconds,
    })
    return withCpu(load, await meter.stop())
  }
  const names = options.scenarios ?? (Object.keys(plans) as ScenarioName[])
  if (options.peerOnly)
    for (const plan of Object.values(plans))
      plan.sides = plan.sides.filter((side) => side === 'service' || side === 'crudPeer')
  try {
    const warm = Math.min(3, options.seconds)
    for (const name of (['create', 'page'] as const).filter((name) => names.includes(name)))
      for (const side of plans[name].sides) await run(side, plans[name], warm)
    const rounds = Object.fromEntries(names.map((name) => [name, []])) as unknown as Record<
      ScenarioName,
      Partial<Record<Side, Measured>>[]
    >
    for (let round = 1; round <= options.rounds; round++) {
      for (const name of names) {
        const plan = plans[name]
        const measured: Partial<Record<Side, Measured>> = {}
        for (const side of plan.sides) measured[side] = await run(side, plan, options.seconds)
        rounds[name].push(measured)
        console.log(
          `  round ${round} ${name} (${plan.connections} connections): ` +
            plan.sides.map((side) => `${side} ${measured[side]?.requestsPerSecond.toFixed(0)}/s`).join(', '),
        )
      }
    }
    return Object.fromEntries(
      names.map((name) => [name, summarise(rounds[name] as Record<Side, Measured>[])]),
    ) as Partial<Record<ScenarioName, Scenario>>
  } finally {
    await service.stop()
    await crudPeer.stop()
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
