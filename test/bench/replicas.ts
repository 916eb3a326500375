import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { encodeCursor } from '../../src/plants/cursor.ts'
import { percentile } from '../support/percentiles.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { startPrimaryWithReplica } from '../support/postgres-replica.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { type Load, medianLoad, runWrk } from './load.ts'
import { seedTestEvents } from './seed.ts'
import { type Bench, startService } from './services.ts'
import { writeFixture } from './tokens.ts'

// Read replicas (docs/operating.md, Scaling out), on a primary and a streaming replica made for the run, on the same
// machine: GET /plants?limit=20 from the primary alone and with the replica; the wait of a read
// that names the caller's position while creates run; and what answering that position costs a
// create, against another checkout (`compareRoot`, the service before the change) on the same
// primary.
export type ReplicaOptions = { rounds: number; seconds: number; connections: number; compareRoot?: string }

const READERS = 200
const PLANTS_PER_READER = 50
const PROBES = 500

export async function measureReplicas(bench: Bench, options: ReplicaOptions) {
  const pair = await startPrimaryWithReplica()
  const sql = postgres(pair.primaryUrl, { max: 2, onnotice: () => {} })
  try {
    await migratePostgresDatabase(pair.primaryUrl, undefined, TEST_KEYS)
    await seedTestEvents(sql, 1, READERS * PLANTS_PER_READER, `'reader-' || (i % ${READERS})`)
    await pair.caughtUp()
    const readers = await writeFixture(bench.secret, 'replica-reader', READERS)
    const writers = await writeFixture(bench.secret, 'replica-writer', 1000)
    const primaryOnly = await startService(bench, pair.primaryUrl)
    const withReplica = await startService(bench, pair.primaryUrl, { DATABASE_READ_URLS: pair.replicaUrl })
    const before = bench.serviceRoot ? undefined : options.compareRoot
    const compared = before
      ? await startService({ ...bench, serviceRoot: before }, pair.primaryUrl)
      : undefined
    let idBase = 0
    const wrk = (
      server: { url: string; process: { pid: number } },
      mode: 'create' | 'page',
      seconds: number,
    ) => {
      idBase += 10_000_000_000
      return runWrk({
        url: server.url,
        pid: server.process.pid,
        mode,
        tokensFile: mode === 'page' ? readers.tokensFile : writers.tokensFile,
        idBase,
        connections: options.connections,
        seconds,
      })
    }
    try {
      const page: { primaryOnly: Load; withReplica: Load }[] = []
      const create: { withPosition: Load; before?: Load }[] = []
      for (const server of [primaryOnly, withReplica, compared]) if (server) await wrk(server, 'page', 2)
      // The probe's page starts at its own plant, so it stays one page however many it made.
      const sourcesBefore = await readSources(withReplica.url)
      for (let round = 1; round <= options.rounds; round++) {
        const measured = {
          primaryOnly: await wrk(primaryOnly, 'page', options.seconds),
          withReplica: await wrk(withReplica, 'page', options.seconds),
        }
        page.push(measured)
        const creates = {
          withPosition: await wrk(primaryOnly, 'create', options.seconds),
          before: compared ? await wrk(compared, 'create', options.seconds) : undefined,
        }
        create.push(creates)
        console.log(
          `  round ${round}: GET primary ${measured.primaryOnly.requestsPerSecond.toFixed(0)}/s, with replica ${measured.withReplica.requestsPerSecond.toFixed(0)}/s; ` +
            `POST ${creates.withPosition.requestsPerSecond.toFixed(0)}/s` +
            (creates.before ? `, before ${creates.before.requestsPerSecond.toFixed(0)}/s` : ''),
        )
      }
      const sourcesAfter = await readSources(withReplica.url)
      console.log('  read-your-writes probes under writes')
      const waits = await probeReadYourWrites(withReplica.url, readers.tokens[0] ?? '', writers.tokens)
      const figures = {
        page: {
          primaryOnly: medianLoad(page.map((round) => round.primaryOnly)),
          withReplica: medianLoad(page.map((round) => round.withReplica)),
          servedByReplica: sourcesAfter.replica - sourcesBefore.replica,
          servedByPrimary: sourcesAfter.primary - sourcesBefore.primary,
        },
        create: {
          withPosition: medianLoad(create.map((round) => round.withPosition)),
          before: compared
            ? medianLoad(create.flatMap((round) => (round.before ? [round.before] : [])))
            : undefined,
          rounds: create.map((round) => [
            round.withPosition.requestsPerSecond,
            round.before?.requestsPerSecond,
          ]),
        },
        readYourWrites: waits,
      }
      printReplicaReport(figures)
      return figures
    } finally {
      await Promise.all([primaryOnly.stop(), withReplica.stop(), compared?.stop()])
    }
  } finally {
    await sql.end()
    pair.stop()
  }
}

// While writers create plants (WRITERS at once, each as fast as it is answered), one client creates
// a plant and at once lists with its position, PROBES times; a plain listing beside each for
// reference. The wait is what the read with the position takes beyond the plain one.
const WRITERS = 16

async function probeReadYourWrites(url: string, probeToken: string, writerTokens: string[]) {
  let writing = true
  const writes = Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      const auth = tokenHeader(writerTokens[writer % writerTokens.length] ?? '')
      for (let id = 1; writing; id++) {
        await fetch(`${url}/plants`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ id: 9_000_000_000 + writer * 1_000_000 + id, name: 'background' }),
        }).then((response) => response.arrayBuffer())
      }
    }),
  )
  await Bun.sleep(1000)
  const auth = tokenHeader(probeToken)
  const withPosition: number[] = []
  const plain: number[] = []
  const before = await readSources(url)
  const waitsBefore = await readWaits(url)
  try {
    for (let probe = 1; probe <= PROBES; probe++) {
      const created = await fetch(`${url}/plants`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 8_000_000_000 + probe, name: `probe ${probe}` }),
      })
      const position = created.headers.get('plant-store-position') ?? '0'
      let started = performance.now()
      const response = await fetch(`${url}/plants?limit=20&after=${encodeCursor(BigInt(position))}`, {
        headers: { ...auth, 'plant-store-position': position },
      })
      const seen = (await response.json()) as { name: string }[]
      withPosition.push(performance.now() - started)
      if (!seen.some((plant) => plant.name === `probe ${probe}`)) {
        throw new Error(`probe ${probe}: the read with its position did not list it`)
      }
      started = performance.now()
      await (await fetch(`${url}/plants?limit=20`, { headers: auth })).arrayBuffer()
      plain.push(performance.now() - started)
    }
  } finally {
    writing = false
    await writes
  }
  const after = await readSources(url)
  const waitsAfter = await readWaits(url)
  return {
    probes: PROBES,
    withPositionMs: percentiles(withPosition),
    plainMs: percentiles(plain),
    // The service's own measure (plant_store_read_position_wait_seconds): the time waited before
    // the read that served it began; p50 and p99 as the upper bound of the bucket they fall in.
    serverWaitMs: waitPercentiles(waitsBefore, waitsAfter),
    // Reads with a position that the primary answered (the replica had not shown it in time).
    servedByPrimary: after.primary - before.primary,
  }
}

// The wait histogram's cumulative buckets: upper bound in ms → count.
async function readWaits(url: string): Promise<Map<number, number>> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const buckets = new Map<number, number>()
  for (const [, le, value] of text.matchAll(
    /^plant_store_read_position_wait_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm,
  )) {
    buckets.set(le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le) * 1000, Number(value))
  }
  return buckets
}

function waitPercentiles(before: Map<number, number>, after: Map<number, number>) {
  const bounds = [...after.keys()].sort((a, b) => a - b)
  const count = (bound: number) => (after.get(bound) ?? 0) - (before.get(bound) ?? 0)
  const total = count(Number.POSITIVE_INFINITY)
  const at = (fraction: number) => bounds.find((bound) => count(bound) >= fraction * total) ?? Number.NaN
  return { reads: total, p50AtMost: at(0.5), p99AtMost: at(0.99), withinOneMs: count(1) / total }
}

async function readSources(url: string) {
  const text = await (await fetch(`${url}/metrics`)).text()
  let primary = 0
  let replica = 0
  for (const [, source, value] of text.matchAll(/^plant_store_reads_total\{source="([^"]+)"\} (\S+)$/gm)) {
    if (source === 'primary') primary += Number(value)
    else replica += Number(value)
  }
  return { primary, replica }
}

function percentiles(values: number[]) {
  return { p50: percentile(values, 0.5), p99: percentile(values, 0.99) }
}

type Figures = {
  page: { primaryOnly: Load; withReplica: Load; servedByReplica: number; servedByPrimary: number }
  create: { withPosition: Load; before?: Load }
  readYourWrites: Awaited<ReturnType<typeof probeReadYourWrites>>
}

function printReplicaReport({ page, create, readYourWrites }: Figures) {
  const row = (what: string, load: Load) =>
    console.log(
      `| ${what} | ${load.requestsPerSecond.toFixed(0)} | ${load.p50Ms.toFixed(2)} | ${load.p99Ms.toFixed(2)} | ${load.errors} |`,
    )
  console.log('\n| read replicas | req/s | p50 ms | p99 ms | errors |')
  console.log('|---|---:|---:|---:|---:|')
  row('GET /plants?limit=20, primary only', page.primaryOnly)
  row('GET /plants?limit=20, primary + replica', page.withReplica)
  row('POST /plants, with Plant-Store-Position', create.withPosition)
  if (create.before) row('POST /plants, the checkout compared', create.before)
  console.log(
    `\nreads served by the replica / primary in the replica runs: ${page.servedByReplica} / ${page.servedByPrimary}`,
  )
  const { withPositionMs, plainMs, servedByPrimary, probes, serverWaitMs } = readYourWrites
  console.log(
    `read-your-writes under writes (${probes} probes): with the position p50 ${withPositionMs.p50.toFixed(2)} ms, p99 ${withPositionMs.p99.toFixed(2)} ms; ` +
      `plain p50 ${plainMs.p50.toFixed(2)} ms, p99 ${plainMs.p99.toFixed(2)} ms; ${servedByPrimary} answered by the primary`,
  )
  console.log(
    `the service's wait before the read that served the position (${serverWaitMs.reads} reads): p50 ≤ ${serverWaitMs.p50AtMost} ms, ` +
      `p99 ≤ ${serverWaitMs.p99AtMost} ms, ${(serverWaitMs.withinOneMs * 100).toFixed(1)}% within 1 ms`,
  )
}
