import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { median } from '../support/percentiles.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { meterCpu } from './cpu.ts'
import { runWrk } from './load.ts'
import { seedTestEvents } from './seed.ts'
import { startService } from './services.ts'
import { writeFixture, writeTagsFile } from './tokens.ts'

// Pages and 304s of checkouts of the service side by side, on one store, round after round:
// `bun test/bench/reads-before-after.ts [--rounds 3] [--seconds 5] <checkout> <checkout> …` (each
// with its own node_modules). Each load gets a fresh service process, so that what one leaves
// behind (a driver's queues, say) does not weigh on the next; CPU per request of the service and
// of its PostgreSQL backends, medians over the rounds.
const { values: flags, positionals: roots } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '5' } },
})
const LOADS = [
  { mode: 'page', connections: 32 },
  { mode: 'page', connections: 4 },
  { mode: 'page', connections: 1 },
  { mode: 'revalidate', connections: 32 },
  { mode: 'revalidate', connections: 4 },
  { mode: 'revalidate', connections: 1 },
] as const
const READERS = 200

const database = await createTestDatabase('reads_ab')
const sql = postgres(database.url, { max: 2, onnotice: () => {} })
type Figures = { requestsPerSecond: number; serviceMs: number; databaseMs: number }
const measured = new Map<string, Figures[]>()
try {
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  await seedTestEvents(sql, 1, READERS * 50, `'reader-' || (i % ${READERS})`)
  const secret = crypto.randomUUID() + crypto.randomUUID()
  const readers = await writeFixture(secret, 'reader', READERS)
  const tagsFile = await writeTagsFile(sql, readers)
  for (let round = 1; round <= Number(flags.rounds); round++) {
    for (const load of LOADS) {
      for (const root of roots) {
        const service = await startService(
          { secret, poolSize: 10, logLevel: 'info', serviceRoot: root },
          database.url,
        )
        try {
          const run = (seconds: number) =>
            runWrk({
              url: service.url,
              pid: service.process.pid,
              ...load,
              tokensFile: readers.tokensFile,
              tagsFile: load.mode === 'revalidate' ? tagsFile : undefined,
              idBase: 0,
              seconds,
            })
          await run(1)
          const meter = await meterCpu(sql, database.name, service.process.pid)
          const result = await run(Number(flags.seconds))
          const cpu = await meter.stop()
          const requests = result.requestsPerSecond * Number(flags.seconds)
          const key = `${load.mode} ${load.connections}\t${root}`
          measured.set(key, [
            ...(measured.get(key) ?? []),
            {
              requestsPerSecond: result.requestsPerSecond,
              serviceMs: cpu.processMs / requests,
              databaseMs: cpu.databaseMs / requests,
            },
          ])
        } finally {
          await service.stop()
        }
      }
    }
    console.log(`round ${round} done`)
  }
  console.log(
    '| load | checkout | req/s | CPU ms/req, service | CPU ms/req, PostgreSQL |\n|---|---|---:|---:|---:|',
  )
  for (const [key, rounds] of measured) {
    const [load, root] = key.split('\t')
    const of = (field: keyof Figures) => median(rounds.map((figures) => figures[field]))
    console.log(
      `| ${load} | ${root} | ${of('requestsPerSecond').toFixed(0)} | ${of('serviceMs').toFixed(3)} | ${of('databaseMs').toFixed(3)} |`,
    )
  }
} finally {
  await sql.end()
  await database.drop()
}
