import type postgres from 'postgres'
import { loadConfig } from '../../src/config.ts'
import { openPostgres } from '../../src/store/database.ts'
import { CAPTURED_ID, captureStatements, type Statement } from './capture.ts'
import { percentile } from './memory.ts'

// The SQL ceiling: the statements the service issues for one create or one page, replayed with
// the same driver and pool size, as fast as they go, with no HTTP, JSON or JWT in the way.
// Usage: bun test/bench/sql-ceiling.ts <create|page> <url> <pool> <concurrency> <seconds> <owners file> <id base>
const [
  mode = 'create',
  url = '',
  pool = '10',
  concurrency = '64',
  seconds = '10',
  ownersFile = '',
  idBase = '0',
] = process.argv.slice(2)

const owners = (await Bun.file(ownersFile).text()).split('\n').filter((line) => line.length > 0)
const captured = await captureStatements(url)
const statements = mode === 'page' ? captured.page : captured.create
if (mode === 'create' && !statements.some((statement) => /insert into "events"/i.test(statement.query)))
  throw new Error('the captured create appended no event: the ceiling would replay a retry')
// The service's own connection settings (pool, timeouts, session parameters), from its own config.
const config = loadConfig({ DATABASE_URL: url, DATABASE_POOL_SIZE: pool, AUTH_JWT_SECRET: 'x'.repeat(32) })
if (config.storage.kind !== 'postgres') throw new Error('the SQL ceiling needs a PostgreSQL url')
const handle = openPostgres(config.storage)
const client = (handle.db as unknown as { $client: postgres.Sql }).$client

const isBoundary = (query: string) => /^(begin|commit|rollback)\b/i.test(query.trim())
const inTransaction = statements.some((statement) => /^begin\b/i.test(statement.query.trim()))
const waves = groupWaves(statements.filter((statement) => !isBoundary(statement.query)))

function groupWaves(list: Statement[]): Statement[][] {
  const byWave = new Map<number, Statement[]>()
  for (const statement of list) byWave.set(statement.wave, [...(byWave.get(statement.wave) ?? []), statement])
  return [...byWave.values()]
}

function substitute(value: unknown, owner: string, id: bigint): unknown {
  const ids = (text: string) =>
    text.replaceAll(captured.owner, owner).replaceAll(CAPTURED_ID.toString(), id.toString())
  if (typeof value === 'string') return ids(value)
  if (typeof value === 'bigint') return value === CAPTURED_ID ? id : value
  return value
}

async function runOnce(sql: postgres.Sql | postgres.TransactionSql, owner: string, id: bigint) {
  for (const wave of waves) {
    await Promise.all(
      wave.map((statement) =>
        sql.unsafe(
          statement.query,
          statement.parameters.map((value) =>
            substitute(value, owner, id),
          ) as postgres.ParameterOrJSON<never>[],
          { prepare: statement.prepared },
        ),
      ),
    )
  }
}

let counter = 0
const operation = () => {
  counter++
  const owner = owners[counter % owners.length] as string
  const id = BigInt(idBase) + BigInt(counter)
  return inTransaction ? client.begin((tx) => runOnce(tx, owner, id)) : runOnce(client, owner, id)
}

const latencies: number[] = []
let errors = 0
const deadline = performance.now() + Number(seconds) * 1000
const started = performance.now()
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (performance.now() < deadline) {
      const begun = performance.now()
      try {
        await operation()
        latencies.push(performance.now() - begun)
      } catch (error) {
        if (errors++ === 0) console.error(error)
      }
    }
  }),
)
const elapsed = (performance.now() - started) / 1000
await handle.close()
latencies.sort((a, b) => a - b)
console.log(
  JSON.stringify({
    requestsPerSecond: latencies.length / elapsed,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    errors,
    statements: statements.map(({ query, wave, prepared }) => ({ wave, prepared, query })),
  }),
)
