import type postgres from 'postgres'
import { median } from '../support/percentiles.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { peakResidentMemory, residentMb } from '../support/resident-memory.ts'
import { runWrk } from './load.ts'
import { countEvents, seedTestEvents } from './seed.ts'
import { type Bench, startService } from './services.ts'
import { writeFixture } from './tokens.ts'

export type GrowthOptions = { rounds: number; seconds: number; listingPlants: number; largeStore: number }

const PROBES = 4
const PAGE_CONNECTIONS = 4

// How the cost grows with the store: a page with 1,000 events in the store and with 1,000,000
// (almost all of other owners), then one owner's full streamed listing.
export async function measureGrowth(
  bench: Bench,
  databaseUrl: string,
  sql: postgres.Sql,
  options: GrowthOptions,
) {
  // Every 10th of the first 1,000 events belongs to one of the probe owners: 25 plants each.
  await seedTestEvents(
    sql,
    1,
    1000,
    `case when i % 10 = 0 then 'probe-' || (i / 10 % ${PROBES}) else 'other-' || (i % 997) end`,
  )
  const probes = await writeFixture(bench.secret, 'probe', PROBES)
  const pageLatency = async () => {
    const service = await startService(bench, databaseUrl)
    try {
      const run = (seconds: number) =>
        runWrk({
          url: service.url,
          pid: service.process.pid,
          mode: 'page',
          tokensFile: probes.tokensFile,
          idBase: 0,
          connections: PAGE_CONNECTIONS,
          seconds,
        })
      await run(2)
      const rounds = []
      for (let round = 0; round < options.rounds; round++) rounds.push(await run(options.seconds))
      return {
        events: await countEvents(sql),
        p50Ms: median(rounds.map((round) => round.p50Ms)),
        p99Ms: median(rounds.map((round) => round.p99Ms)),
        requestsPerSecond: median(rounds.map((round) => round.requestsPerSecond)),
        errors: rounds.reduce((sum, round) => sum + round.errors, 0),
      }
    } finally {
      await service.stop()
    }
  }
  const small = await pageLatency()
  console.log(`  page with ${small.events} events: p50 ${small.p50Ms.toFixed(2)} ms`)
  await seedTestEvents(sql, 1001, options.largeStore, `'other-' || (i % 9973)`)
  const large = await pageLatency()
  console.log(`  page with ${large.events} events: p50 ${large.p50Ms.toFixed(2)} ms`)

  const start = options.largeStore + 1
  const bulk = await writeFixture(bench.secret, 'bulk', 1)
  await seedTestEvents(sql, start, start + options.listingPlants - 1, `'${bulk.owners[0]}'`)
  const listings = []
  for (let round = 0; round < options.rounds; round++)
    listings.push(await streamListing(bench, databaseUrl, bulk.tokens[0] ?? '', options.listingPlants))
  return {
    page: { small, large, ratio: large.p50Ms / small.p50Ms },
    listing: {
      plants: options.listingPlants,
      plantsPerSecond: median(listings.map((listing) => listing.plantsPerSecond)),
      baselineRssMb: median(listings.map((listing) => listing.baselineRssMb)),
      peakRssMb: median(listings.map((listing) => listing.peakRssMb)),
      growthMb: median(listings.map((listing) => listing.peakRssMb - listing.baselineRssMb)),
      rounds: listings,
    },
  }
}

// A fresh service process per listing, so the peak belongs to this listing alone.
async function streamListing(bench: Bench, databaseUrl: string, token: string, expected: number) {
  const service = await startService(bench, databaseUrl)
  try {
    const headers = tokenHeader(token)
    for (let warm = 0; warm < 20; warm++)
      await (await fetch(`${service.url}/plants?limit=100`, { headers })).text()
    Bun.gc(true)
    await Bun.sleep(500)
    const baselineRssMb = await residentMb(service.process.pid)
    const memory = peakResidentMemory(service.process.pid, 20)
    const started = performance.now()
    const response = await fetch(`${service.url}/plants`, { headers })
    let plants = 0
    let carry = ''
    const decoder = new TextDecoder()
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      const text = carry + decoder.decode(chunk, { stream: true })
      plants += text.split('"name"').length - 1
      carry = text.slice(-5) // a "name" cut in two by a chunk boundary is counted with the next chunk
    }
    const seconds = (performance.now() - started) / 1000
    const peakRssMb = memory.stop()
    if (response.status !== 200) throw new Error(`the full listing answered ${response.status}`)
    if (plants !== expected) throw new Error(`the full listing returned ${plants} plants, not ${expected}`)
    return { plants, seconds, plantsPerSecond: plants / seconds, baselineRssMb, peakRssMb }
  } finally {
    await service.stop()
  }
}
