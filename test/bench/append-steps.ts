// What the append of a create does in PostgreSQL, step by step, and what each step costs: the
// statement a lone create runs (captured through the ORM's logger), run under EXPLAIN (ANALYZE,
// BUFFERS, WAL) for owners whose keys the process already holds, with the median time of each
// step's plan node; and the service's own work before it (finding the key, sealing, the stream id).
// Run: bun test/bench/append-steps.ts [creates]   (needs the PostgreSQL of the tests)
import process from 'node:process'
import { drizzle } from 'drizzle-orm/postgres-js'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { seal, streamIdOf } from '../../src/crypto/sealing.ts'
import { postgresClient } from '../../src/database/postgres-client.ts'
import { appendEvents } from '../../src/event-log/append.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { median } from '../support/percentiles.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { benchCreate } from './bench-create.ts'

const CREATES = Number(process.argv[2] ?? 2000)
const OWNERS = 200

type Plan = { 'Node Type': string; 'Subplan Name'?: string; 'Actual Total Time'?: number; Plans?: Plan[] }

const database = await createTestDatabase('bench_append_steps')
await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
const client = postgresClient(database.url, { max: 1, onnotice: () => {} })
let captured: { query: string; params: unknown[] } | undefined
const db = drizzle({
  client,
  logger: {
    logQuery: (query, params) => {
      captured = { query, params }
    },
  },
})
const keyring = createKeyring(TEST_KEYS)
const keys = ownerKeyCache(keyring)
const append = (owner: string, id: number) =>
  appendEvents(db, keys, [benchCreate(owner, id, `request ${id}`)])

try {
  // Every owner has a key, and the process holds it, as for most creates.
  for (let owner = 0; owner < OWNERS; owner++) await append(`owner ${owner}`, owner)
  const steps = new Map<string, number[]>()
  const whole: number[] = []
  for (let id = OWNERS; id < OWNERS + CREATES; id++) {
    await append(`owner ${id % OWNERS}`, id)
    if (!captured) throw new Error('no statement was captured')
    // The same statement again, a new plant, under EXPLAIN: it appends too.
    const params = captured.params.map((value) => (value === `${id}` ? `${id + CREATES}` : value))
    const [row] = await client.unsafe(
      `explain (analyze, buffers, wal, format json) ${captured.query}`,
      params as string[],
    )
    const [explained] = (row?.['QUERY PLAN'] ?? []) as { Plan: Plan; 'Execution Time': number }[]
    if (!explained) throw new Error('no plan')
    const { Plan: plan, 'Execution Time': execution } = explained
    whole.push(execution)
    // Each step is a common table expression, planned as a subplan of its own.
    const visit = (node: Plan) => {
      const name = node['Subplan Name']
      if (name?.startsWith('CTE ') && node['Actual Total Time'] !== undefined) {
        steps.set(name.slice(4), [...(steps.get(name.slice(4)) ?? []), node['Actual Total Time']])
      }
      for (const child of node.Plans ?? []) visit(child)
    }
    visit(plan)
  }
  console.log(`append statement, ${CREATES} lone creates of known owners (median ms):`)
  console.log(`  whole statement (execution)  ${median(whole).toFixed(4)}`)
  for (const [name, values] of steps) console.log(`  ${name.padEnd(28)} ${median(values).toFixed(4)}`)
  // The service's side of the same create: key from the cache, data and metadata sealed, stream id.
  const rounds = 20_000
  const started = performance.now()
  for (let id = 0; id < rounds; id++) {
    const key = (await keys.find(db, [`owner ${id % OWNERS}`])).get(`owner ${id % OWNERS}`)
    if (!key) throw new Error('no key')
    const raw = keys.keyring.open(key)
    const place = { streamId: streamIdOf(BigInt(id), raw), streamVersion: 1 }
    seal(JSON.stringify({ id: String(id), name: `plant ${id}`, tag: 'bench' }), raw, 'data', place)
    seal(JSON.stringify({ requestId: `request ${id}` }), raw, 'metadata', place)
  }
  console.log(
    `service, per create: key, seal data and metadata, stream id: ${(((performance.now() - started) / rounds) * 1000).toFixed(1)} µs`,
  )
} finally {
  await client.end()
  await database.drop()
}
