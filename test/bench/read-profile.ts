import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { meterCpu } from './cpu.ts'
import { runWrk } from './load.ts'
import { seedTestEvents } from './seed.ts'
import { startService } from './services.ts'
import { writeFixture, writeTagsFile } from './tokens.ts'

// Where a request's CPU goes: the service under Bun's CPU profiler, one load of creates, pages or
// 304s (`--mode create|page|revalidate`), and what PostgreSQL's backends spent, per statement when
// pg_stat_statements is loaded.
const { values: flags } = parseArgs({
  options: {
    admin: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    mode: { type: 'string', default: 'page' },
    connections: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '8' },
    profile: { type: 'string' },
    env: { type: 'string', multiple: true, default: [] },
  },
})
const admin = postgres(flags.admin ?? '', { max: 1, onnotice: () => {} })
const name = `plant_store_profile_${Date.now().toString(36)}`
await admin.unsafe(`create database ${name}`)
const url = new URL(flags.admin ?? '')
url.pathname = `/${name}`
const sql = postgres(url.toString(), { max: 2, onnotice: () => {} })
try {
  await migratePostgresDatabase(url.toString())
  await sql`create extension if not exists pg_stat_statements`.catch(() => {})
  await seedTestEvents(sql, 1, 10_000, `'reader-' || (i % 200)`)
  await sql`analyze`
  const secret = crypto.randomUUID() + crypto.randomUUID()
  const readers = await writeFixture(secret, 'reader', 200)
  const writers = await writeFixture(secret, 'writer', 1000)
  const tagsFile = await writeTagsFile(sql, readers)
  const extra = Object.fromEntries((flags.env ?? []).map((pair) => pair.split('=', 2) as [string, string]))
  const profile = flags.profile ? ['--cpu-prof-md', `--cpu-prof-dir=${flags.profile}`] : []
  const bench = { secret, poolSize: 10, logLevel: 'info' }
  const service = await startService(bench, url.toString(), extra, profile)
  try {
    const mode = flags.mode as 'create' | 'page' | 'revalidate'
    let loads = 0
    const load = (seconds: number) =>
      runWrk({
        url: service.url,
        pid: service.process.pid,
        mode,
        tokensFile: mode === 'create' ? writers.tokensFile : readers.tokensFile,
        tagsFile: mode === 'revalidate' ? tagsFile : undefined,
        idBase: ++loads * 10_000_000_000,
        connections: Number(flags.connections),
        seconds,
      })
    await load(2)
    await sql.unsafe('select pg_stat_statements_reset()').catch(() => {})
    const commits = () =>
      sql<{ n: string }[]>`select xact_commit::text as n from pg_stat_database where datname = ${name}`.then(
        ([row]) => Number(row?.n ?? 0),
      )
    const committedBefore = await commits()
    const meter = await meterCpu(sql, name, service.process.pid)
    const run = await load(Number(flags.seconds))
    const cpu = await meter.stop()
    // The database's transactions (each statement outside one is one) a request, the meter's polls included.
    const transactionsPerRequest = ((await commits()) - committedBefore) / run.requests
    console.log(
      JSON.stringify({
        mode,
        connections: flags.connections,
        requestsPerSecond: Math.round(run.requestsPerSecond),
        errors: run.errors,
        serviceCpuMsPerRequest: (cpu.processMs / run.requests).toFixed(4),
        databaseCpuMsPerRequest: (cpu.databaseMs / run.requests).toFixed(4),
        transactionsPerRequest: transactionsPerRequest.toFixed(3),
      }),
    )
    const statements = await sql
      .unsafe(
        `select calls, round((total_exec_time / calls)::numeric, 4) as exec_ms,
                round((total_plan_time / greatest(calls, 1))::numeric, 4) as plan_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 120) as query
         from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
         order by total_exec_time desc limit 8`,
      )
      .catch((error) => {
        console.log(`no pg_stat_statements: ${error}`)
        return []
      })
    for (const row of statements) console.log(JSON.stringify(row))
  } finally {
    await service.stop()
  }
} finally {
  await sql.end()
  await admin.unsafe(`drop database ${name} with (force)`)
  await admin.end()
}
