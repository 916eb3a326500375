import { join } from 'node:path'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { median } from '../support/percentiles.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { seedTestEvents } from './seed.ts'

// The listing's statements of checkouts side by side, in process, on one store, round after round:
// `bun test/bench/listing-before-after.ts [--rounds 5] [--reads 4000] <checkout> <checkout> …`
// (each with its own node_modules; `<module>` its listing module, e.g. `src/plants/listing.ts`,
// given as `checkout=module`). For each: pages of 20 at 32 in flight, through the grouped reads of
// the primary and through the covering statements of a replica; reads per second, medians.
const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '5' }, reads: { type: 'string', default: '4000' } },
})
const ROUNDS = Number(flags.rounds)
const READS = Number(flags.reads)
const OWNERS = 200
const IN_FLIGHT = 32

type Listing = {
  listPlants: (db: unknown, request: object, reads?: unknown) => Promise<{ kind: string }>
  listPlantsCovering: (db: unknown, request: object, covering: bigint) => Promise<{ kind: string }>
}
type Checkout = {
  name: string
  listing: Listing
  groupedReads: (db: unknown, n: number) => unknown
  db: unknown
}

const database = await createTestDatabase('listing_ab')
const sql = postgres(database.url, { max: 2, onnotice: () => {} })
const closers: (() => Promise<void>)[] = []
try {
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  await seedTestEvents(sql, 1, OWNERS * 50, `'reader-' || (i % ${OWNERS})`)
  // Each owner's latest position: what a caller who just created a plant sends.
  const heads = new Map(
    (
      await sql<
        { owner: string; head: string }[]
      >`select owner, max(position)::text as head from plants group by owner`
    ).map(({ owner, head }) => [owner, BigInt(head)]),
  )
  const checkouts: Checkout[] = []
  for (const argument of positionals) {
    const [root = '', listingPath = '', groupsPath = ''] = argument.split('=')
    const { openPostgres } = await import(join(root, 'src/database/database.ts'))
    const handle = openPostgres({
      keys: TEST_KEYS,
      url: database.url,
      poolSize: 8,
      statementTimeoutMs: 10_000,
    })
    closers.push(handle.close)
    const { groupedReads } = await import(join(root, groupsPath))
    checkouts.push({
      name: root,
      listing: await import(join(root, listingPath)),
      groupedReads,
      db: handle.db,
    })
  }
  const figures = new Map<string, number[]>()
  const measure = async (label: string, read: (n: number) => Promise<{ kind: string }>) => {
    let next = 0
    const started = performance.now()
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (let n = next++; n < READS; n = next++) {
          const listing = await read(n)
          if (listing.kind !== 'page') throw new Error(`${label}: a ${listing.kind}`)
        }
      }),
    )
    const rate = READS / ((performance.now() - started) / 1000)
    figures.set(label, [...(figures.get(label) ?? []), rate])
  }
  const request = (n: number) => ({ owner: `reader-${n % OWNERS}`, limit: 20 })
  for (let round = 0; round < ROUNDS; round++) {
    for (const { name, listing, groupedReads, db } of checkouts) {
      const reads = groupedReads(db, 2)
      await measure(`${name} primary, grouped`, (n) => listing.listPlants(db, request(n), reads))
      await measure(`${name} replica, covering`, (n) =>
        listing.listPlantsCovering(db, request(n), heads.get(request(n).owner) ?? 0n),
      )
    }
  }
  for (const [label, rates] of figures) console.log(`${label}: ${Math.round(median(rates))} pages/s`)
} finally {
  for (const close of closers) await close()
  await sql.end()
  await database.drop()
}
