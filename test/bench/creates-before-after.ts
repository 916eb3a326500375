import postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { meterCpu } from './cpu.ts'
import { runWrk } from './load.ts'
import { startService } from './services.ts'
import { writeFixture } from './tokens.ts'

// POST /plants at 32, 4 and 1 connections (or those given as a fourth argument, `32,4`), with the
// CPU a create cost the service and PostgreSQL, for one checkout of the service, on a database made with
// that checkout's own migrations and seeds: `bun test/bench/creates-before-after.ts [root]`. Run it
// for two checkouts in turn, several times, to compare a change's cost to creates (the main bench
// migrates with this checkout's migrations, which an earlier version may not be able to write to).
const root = process.argv[2] ?? new URL('../..', import.meta.url).pathname
const seconds = Number(process.argv[3] ?? 5)
const connectionCounts = (process.argv[4] ?? '32,4,1').split(',').map(Number)
const { migratePostgresDatabase } = await import(`${root}/src/opening/migrate.ts`)
const { seedEvents } = await import(`${root}/test/bench/seed.ts`)
const bench = {
  secret: crypto.randomUUID() + crypto.randomUUID(),
  poolSize: 10,
  logLevel: 'info',
  serviceRoot: root,
}
const database = await createTestDatabase('creates_ab')
// The key-encryption keys for the seed (an earlier checkout ignores the parameter).
const sql = postgres(database.url, { max: 2, onnotice: () => {} })
try {
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  await seedEvents(sql, createKeyring(TEST_KEYS), 1, 10_000, `'reader-' || (i % 200)`)
  await sql`analyze`
  const writers = await writeFixture(bench.secret, 'writer', 1000)
  const service = await startService(bench, database.url)
  try {
    const results: string[] = []
    for (const connections of connectionCounts) {
      const name = new URL(database.url).pathname.slice(1)
      const commits = () =>
        sql<
          { n: string }[]
        >`select xact_commit::text as n from pg_stat_database where datname = ${name}`.then(([row]) =>
          Number(row?.n ?? 0),
        )
      const committedBefore = await commits()
      const meter = await meterCpu(sql, name, service.process.pid)
      const run = await runWrk({
        url: service.url,
        pid: service.process.pid,
        mode: 'create',
        connections,
        seconds,
        tokensFile: writers.tokensFile,
        idBase: connections * 10_000_000_000,
      })
      const cpu = await meter.stop()
      const perRequest = (value: number) => (value / run.requests).toFixed(3)
      const transactions = (await commits()) - committedBefore
      results.push(
        `${connections} connections ${Math.round(run.requestsPerSecond)}/s, CPU ms a create ${perRequest(cpu.processMs)} + ${perRequest(cpu.databaseMs)}, transactions a create ${perRequest(transactions)}`,
      )
    }
    console.log(`${root}: ${results.join(', ')}`)
  } finally {
    await service.stop()
  }
} finally {
  await sql.end()
  await database.drop()
}
