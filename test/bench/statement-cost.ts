// What PostgreSQL does for a lone create and a lone page of the service, beside the CRUD peer's one
// insert and one keyset query, counted in ways a busy machine does not move:
// - instructions per statement: each statement prepared and executed N times in a single-user
//   backend under callgrind (valgrind), less the same run with a tenth of them;
// - WAL bytes per create (pg_current_wal_lsn before and after, in the same backend);
// - PostgreSQL's own timing: pgbench with a fixed count of transactions (`-t`), timed by
//   pg_stat_statements (mean execution time) on the same private server.
// The statements are the service's own, captured through the ORM's logger as a lone create and a
// lone page run them (a create inside a transaction rolled back).
// Each statement's callgrind profile is left in $TMPDIR/plant-cost-<name>.callgrind (for
// callgrind_annotate). Flags below; the figures and the variants used: docs/performance.md.
// Run: bun test/bench/statement-cost.ts [--runs N] [--root <checkout>]   (as root; needs valgrind)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import type { Executor } from '../../src/database/database.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { benchCreate } from './bench-create.ts'
import { seedCeilingOwners } from './pgbench.ts'

const { values: flags } = parseArgs({
  options: {
    // Executions per statement counted (the baseline run executes a tenth of them).
    runs: { type: 'string', default: '1000' },
    // Another checkout whose statements to measure (before and after a change).
    root: { type: 'string', default: new URL('../..', import.meta.url).pathname },
    port: { type: 'string', default: '5449' },
    'skip-callgrind': { type: 'boolean', default: false },
    // A JSON file of other statements to count beside the service's create, on its parameters:
    // [{ "name", "query", "setup"?, "teardown"?, "of"? }] (setup and teardown: SQL run before and
    // after, e.g. dropping an index and making it again; `of`: "page" for the page's parameters).
    variants: { type: 'string' },
    // Only the statements whose name holds this text.
    only: { type: 'string' },
    // Prints the service's statements as captured, and each one's plan (EXPLAIN ANALYZE of an execution).
    print: { type: 'boolean', default: false },
  },
})
const RUNS = Number(flags.runs)
const root = flags.root ?? '.'
const OWNERS = 200
const PLANTS_PER_OWNER = 50
const BATCH = 32

type Captured = { query: string; params: unknown[] }
// `varied`: by parameter index, the pgbench expression that replaces the first capture's value.
type Statement = {
  name: string
  query: string
  params: (i: number) => unknown[]
  varied?: Record<number, string>
  // The peer's connections keep PostgreSQL's default plan cache mode; the service's force generic plans.
  planCacheMode?: 'auto'
  setup?: string
  teardown?: string
  // Creates a transaction (a batch's): its figures are divided by it.
  perTransaction?: number
}

const { appendEvents } = (await import(
  `${root}/src/event-log/append.ts`
)) as typeof import('../../src/event-log/append.ts')
const { ownerKeyCache } = (await import(
  `${root}/src/event-log/owner-keys.ts`
)) as typeof import('../../src/event-log/owner-keys.ts')
const { createKeyring } = (await import(
  `${root}/src/crypto/keyring.ts`
)) as typeof import('../../src/crypto/keyring.ts')
const { migratePostgresDatabase } = (await import(
  `${root}/src/opening/migrate.ts`
)) as typeof import('../../src/opening/migrate.ts')
const { streamIdOf } = (await import(
  `${root}/src/crypto/sealing.ts`
)) as typeof import('../../src/crypto/sealing.ts')
const { primaryReads } = (await import(
  `${root}/src/plants/listing-source.ts`
)) as typeof import('../../src/plants/listing-source.ts')

class RolledBack extends Error {}

const directory = mkdtempSync(join(tmpdir(), 'plant-statement-cost-'))
const data = join(directory, 'data')
const asPostgres = (command: string[]) => {
  const run = Bun.spawnSync(['runuser', '-u', 'postgres', '--', ...command], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (run.exitCode !== 0) throw new Error(`${command[0]} failed: ${run.stderr.toString()}`)
  return run.stdout.toString()
}
Bun.spawnSync(['chown', 'postgres', directory])
const bin = asPostgres(['pg_config', '--bindir']).trim() || '/usr/lib/postgresql/15/bin'
const common = ['plan_cache_mode=force_generic_plan', 'fsync=off', 'autovacuum=off']
const asFlags = (values: string[]) => values.flatMap((value) => ['-c', value])
const settings = asFlags(['shared_preload_libraries=pg_stat_statements', ...common])
asPostgres([`${bin}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
const startPostgres = () =>
  asPostgres([
    `${bin}/pg_ctl`,
    '-D',
    data,
    '-w',
    '-l',
    join(directory, 'log'),
    '-o',
    `-p ${flags.port} -k ${directory} ${settings.join(' ')}`,
    'start',
  ])
startPostgres()
const url = `postgres://postgres@127.0.0.1:${flags.port}/postgres`

try {
  await migratePostgresDatabase(url, undefined, TEST_KEYS)
  let client = postgres(url, { max: 1, onnotice: () => {} })
  await client`create extension pg_stat_statements`
  await client`create table crud_plants (
    owner text not null, id bigint not null, name text not null, tag text, primary key (owner, id))`
  let captured: Captured | undefined
  const db = drizzle({ client, logger: { logQuery: (query, params) => (captured = { query, params }) } })
  const keys = ownerKeyCache(createKeyring(TEST_KEYS))
  const append = (executor: Executor, owner: string, id: number) =>
    appendEvents(executor, keys, [benchCreate(owner, id, crypto.randomUUID())])
  // Every owner with plants (the service's and the peer's), and a key the process holds.
  for (let id = 1; id <= OWNERS * PLANTS_PER_OWNER; id++) await append(db, `owner ${id % OWNERS}`, id)
  await client`insert into crud_plants select owner, id, name, tag from plants`
  // 100,000 more owners with keys, so that each statement is planned for a store of some size (on
  // a few hundred owners' keys, PostgreSQL scans the table rather than probe its key).
  await seedCeilingOwners(client)
  await client`vacuum analyze`
  // A lone create's statement, captured, then rolled back; each execution counted is a new plant
  // of owner 0 (its id and stream id varied, its sealed values those captured).
  await db
    .transaction(async (tx) => {
      await append(tx, 'owner 0', 1_000_000)
      throw new RolledBack()
    })
    .catch((error) => {
      if (!(error instanceof RolledBack)) throw error
    })
  const first = captured as Captured
  const key = (await keys.find(db, ['owner 0'])).get('owner 0')
  if (!key) throw new Error('no key for owner 0')
  const streamAt = first.params.indexOf(streamIdOf(1_000_000n, keys.keyring.open(key)))
  const plantAt = first.params.findIndex((value) => String(value) === '1000000')
  if (streamAt < 0 || plantAt < 0) throw new Error('the create statement takes no stream id or plant id')
  // A batch of BATCH creates of as many owners, as group commit sends under load: counted per
  // create. Its one parameter is the batch's JSON array: each execution's stream ids and plant ids
  // are made new by a prefix.
  await db
    .transaction(async (tx) => {
      await appendEvents(
        tx,
        keys,
        Array.from({ length: BATCH }, (_, k) =>
          benchCreate(`owner ${k}`, 2_000_000 + k, crypto.randomUUID(), `plant ${k}`),
        ),
      )
      throw new RolledBack()
    })
    .catch((error) => {
      if (!(error instanceof RolledBack)) throw error
    })
  const batch = captured as Captured
  const batchValues = (prefix: string) =>
    String(batch.params[0])
      .replaceAll('"streamId":"plant:', `"streamId":"${prefix}:`)
      .replaceAll('"plantId":"', `"plantId":"${prefix}0`)
  const readPlants = primaryReads(db)
  await readPlants({ owner: 'owner 1', limit: 20 })
  const page = captured as Captured
  const ownerParam = page.params.indexOf('owner 1')
  const statements: Statement[] = [
    {
      name: 'create, CRUD peer',
      query:
        'insert into crud_plants (owner, id, name, tag) values ($1::text, $2::bigint, $3::text, $4::text) on conflict do nothing',
      params: (i) => [`owner ${i % OWNERS}`, 2_000_000 + i, `plant ${i}`, 'bench'],
      varied: { 0: `('owner ' || :o)`, 1: ':v' },
      planCacheMode: 'auto',
    },
    {
      name: 'create, service',
      query: first.query,
      params: (i) =>
        first.params.map((value, n) =>
          n === streamAt ? `s${i}` : String(value) === '1000000' ? String(10_000_000 + i) : value,
        ),
      varied: { [streamAt]: `('s' || :v)`, [plantAt]: ':v' },
    },
    {
      name: `create, the service, a batch of ${BATCH} (per create)`,
      query: batch.query,
      params: (i) => [batchValues(String(i))],
      varied: {
        // pgbench takes a colon before a letter for a variable, even in a literal: the array's
        // colons travel as `~` (which it does not hold) and are put back.
        0: `replace(replace(replace('${String(batch.params[0]).replaceAll("'", "''").replaceAll(':', '~')}', '~', ':'), '"streamId":"plant:', '"streamId":"' || CAST(:b AS text) || ':'), '"plantId":"', '"plantId":"' || CAST(:b AS text) || '0')`,
      },
      perTransaction: BATCH,
    },
    {
      name: 'page, CRUD peer',
      query: `select id::text, name, tag from crud_plants where owner = $1::text and id > $2::bigint order by id limit $3::int`,
      params: (i) => [`owner ${i % OWNERS}`, '-9223372036854775808', 21],
      varied: { 0: `('owner ' || :o)` },
      planCacheMode: 'auto',
    },
    {
      // The peer's query orders by its output column `id::text`, so PostgreSQL reads every row of
      // the owner and sorts them as text; ordered by the column, it reads 21 entries of its key.
      name: 'page, CRUD peer ordered by its bigint id',
      query: `select id::text as id, name, tag from crud_plants where owner = $1::text and crud_plants.id > $2::bigint order by crud_plants.id limit $3::int`,
      params: (i) => [`owner ${i % OWNERS}`, '-9223372036854775808', 21],
      varied: { 0: `('owner ' || :o)` },
      planCacheMode: 'auto',
    },
    {
      name: 'page, service',
      query: page.query,
      params: (i) =>
        ownerParam >= 0
          ? page.params.map((value, n) => (n === ownerParam ? `owner ${i % OWNERS}` : value))
          : page.params.map((value) =>
              typeof value === 'string' ? value.replace('"owner 1"', `"owner ${i % OWNERS}"`) : value,
            ),
      varied: ownerParam >= 0 ? { [ownerParam]: `('owner ' || :o)` } : undefined,
    },
  ]
  type Variant = { name: string; query: string; setup?: string; teardown?: string; of?: 'create' | 'page' }
  const variants: Variant[] = flags.variants ? await Bun.file(flags.variants).json() : []
  // A variant runs on the parameters of the service's create, or of its page (`"of": "page"`).
  const of = { create: statements[1] as Statement, page: statements.at(-1) as Statement }
  statements.push(...variants.map(({ of: kind = 'create', ...variant }) => ({ ...of[kind], ...variant })))
  if (flags.only)
    statements.splice(
      0,
      statements.length,
      ...statements.filter(({ name }) => name.includes(flags.only ?? '')),
    )
  if (flags.print) for (const { name, query } of statements) console.log(`${name}:\n${query}\n`)
  console.log(`${new Date().toISOString()}; statements of ${root}; ${RUNS} executions each`)
  console.log(
    `\n| statement | PostgreSQL ms a statement (pg_stat_statements, pgbench -t ${RUNS}) | WAL bytes a transaction | instructions a transaction (callgrind) |`,
  )
  console.log('|---|---:|---:|---:|')
  let counting = 0
  for (const statement of statements) {
    if (statement.setup) await client.unsafe(statement.setup)
    const timing = await pgbenchTiming(client, statement)
    if (flags.print) await explain(client, statement)
    await client.end()
    asPostgres([`${bin}/pg_ctl`, '-D', data, '-w', 'stop'])
    const per = statement.perTransaction ?? 1
    counting += 10_000_000
    const counted = flags['skip-callgrind'] ? undefined : singleUserCount(statement, counting)
    startPostgres()
    client = postgres(url, { max: 1, onnotice: () => {} })
    if (statement.teardown) await client.unsafe(statement.teardown)
    console.log(
      `| ${statement.name} | ${(timing / per).toFixed(4)} | ${counted ? (counted.walBytes / per).toFixed(0) : '–'} | ${counted ? (counted.instructions / per).toFixed(0) : '–'} |`,
    )
  }
} finally {
  Bun.spawnSync([
    'runuser',
    '-u',
    'postgres',
    '--',
    `${bin}/pg_ctl`,
    '-D',
    data,
    '-w',
    '-m',
    'immediate',
    'stop',
  ])
  rmSync(directory, { recursive: true, force: true })
}

// A literal of a parameter, as the single-user backend and pgbench take it.
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  return `'${String(value).replaceAll("'", "''")}'`
}

function executions(statement: Statement, from: number, count: number): string {
  const lines: string[] = []
  for (let i = from; i < from + count; i++)
    lines.push(`EXECUTE s(${statement.params(i).map(literal).join(', ')});`)
  return lines.join('\n')
}

// pgbench -t RUNS (prepared, one client): the statement with the first capture's values, but for
// those a run must vary (`varied`: the plant's id and stream, or the page's owner), timed by
// pg_stat_statements (mean execution time).
async function pgbenchTiming(client: postgres.Sql, statement: Statement): Promise<number> {
  const script = join(directory, 'pgbench.sql')
  const values = statement.params(0)
  const text = statement.query.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1
    return statement.varied?.[index] ?? literal(values[index])
  })
  await Bun.write(
    script,
    `\\set v random(1, 9000000000000000000)\n\\set b random(1, 90000000000)\n\\set o random(0, ${OWNERS - 1})\n${text.replaceAll('\n', ' ')};\n`,
  )
  Bun.spawnSync(['chown', '-R', 'postgres', directory])
  await client.unsafe('select pg_stat_statements_reset()')
  const run = Bun.spawnSync(
    [
      'runuser',
      '-u',
      'postgres',
      '--',
      'env',
      `PGOPTIONS=-c plan_cache_mode=${statement.planCacheMode ?? 'force_generic_plan'}`,
      'pgbench',
      '-n',
      '-M',
      'prepared',
      '-c',
      '1',
      '-t',
      String(RUNS),
      '-f',
      script,
      '-h',
      '127.0.0.1',
      '-p',
      String(flags.port),
      'postgres',
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  if (run.exitCode !== 0) throw new Error(`pgbench failed: ${run.stderr.toString().slice(0, 800)}`)
  const [row] = await client.unsafe(
    `select total_exec_time / calls as ms from pg_stat_statements where calls >= ${RUNS} order by calls desc limit 1`,
  )
  return Number(row?.ms ?? Number.NaN)
}

async function explain(client: postgres.Sql, statement: Statement): Promise<void> {
  await client
    .begin(async (tx) => {
      await tx.unsafe(`set local plan_cache_mode = ${statement.planCacheMode ?? 'force_generic_plan'}`)
      await tx.unsafe(`prepare explained as ${statement.query}`)
      const values = statement.params(99_999_999).map(literal).join(', ')
      for (const row of await tx.unsafe(
        `explain (analyze, buffers, wal, costs off) execute explained(${values})`,
      ))
        console.log(row['QUERY PLAN'])
      throw new RolledBack()
    })
    .catch((error) => {
      if (!(error instanceof RolledBack)) console.log(`no plan: ${error}`)
    })
}

// Instructions of one execution: a single-user backend under callgrind runs `runs` executions,
// and again a tenth of them; the difference over the executions between. WAL from the LSN.
function singleUserCount(statement: Statement, from: number): { instructions: number; walBytes: number } {
  const run = (label: string, from: number, count: number) => {
    const input = join(directory, `${label}.sql`)
    const out = join(directory, `${label}.callgrind`)
    Bun.spawnSync(['chown', 'postgres', directory])
    writeFileSync(
      input,
      `SET plan_cache_mode = ${statement.planCacheMode ?? 'force_generic_plan'};\nPREPARE s AS ${statement.query.replaceAll('\n', ' ')};\nSELECT pg_current_wal_lsn() AS before_lsn;\n${executions(statement, from, count)}\nSELECT pg_current_wal_lsn() AS after_lsn;\n`,
    )
    const child = Bun.spawnSync(
      [
        'runuser',
        '-u',
        'postgres',
        '--',
        'valgrind',
        '--tool=callgrind',
        `--callgrind-out-file=${out}`,
        `${bin}/postgres`,
        '--single',
        '-D',
        data,
        ...asFlags([...common, 'full_page_writes=off']),
        'postgres',
      ],
      { stdin: Bun.file(input), stdout: 'pipe', stderr: 'pipe' },
    )
    const output = child.stdout.toString()
    const lsns = [...output.matchAll(/_lsn = "([0-9A-F]+)\/([0-9A-F]+)"/g)].map(
      (match) => BigInt(`0x${match[1]}`) * 2n ** 32n + BigInt(`0x${match[2]}`),
    )
    const ir = /summary: (\d+)/.exec(readFileSync(out, 'utf8'))?.[1]
    if (child.exitCode !== 0 || lsns.length !== 2 || ir === undefined)
      throw new Error(`single-user run failed: ${child.stderr.toString().slice(-800)}`)
    if (label === 'large')
      Bun.spawnSync(['cp', out, `${tmpdir()}/plant-cost-${statement.name.replace(/\W+/g, '-')}.callgrind`])
    return { instructions: Number(ir), walBytes: Number((lsns[1] as bigint) - (lsns[0] as bigint)) }
  }
  const few = Math.max(1, Math.round(RUNS / 10))
  const small = run('small', from, few)
  const large = run('large', from + few, RUNS)
  return {
    instructions: (large.instructions - small.instructions) / (RUNS - few),
    walBytes: (large.walBytes - small.walBytes) / (RUNS - few),
  }
}
