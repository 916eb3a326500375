import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type postgres from 'postgres'
import { meterCpu } from './cpu.ts'
import { percentile } from './memory.ts'

// The database ceilings, independent of the service's design: pgbench (prepared statements, as
// many clients as the service's pool) on the project's migrated schema, running the least any
// event-sourced service must do for the job, with no HTTP, JSON or JWT and no driver of ours.
const SCRIPTS = {
  // A create: one transaction that appends the PlantCreated event and inserts its plants row.
  // Ids are unique in practice (random over 2^63, owners random over 100,000). pgbench takes a
  // colon before a letter for a variable, even inside a literal: hence ':' || 'ceiling-'.
  create: `
\\set owner random(1, 100000)
\\set id random(1, 9000000000000000000)
BEGIN;
INSERT INTO events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  VALUES ('plant:' || CAST(:id AS text) || ':' || 'ceiling-' || CAST(:owner AS text), 1, 'PlantCreated', 1,
          jsonb_build_object('id', CAST(:id AS text), 'name', 'plant ' || CAST(:id AS text), 'tag', 'bench'),
          jsonb_build_object('owner', 'ceiling-' || CAST(:owner AS text), 'requestId', 'pgbench'), now());
INSERT INTO plants (owner, id, name, tag, position)
  VALUES ('ceiling-' || CAST(:owner AS text), CAST(:id AS bigint), 'plant ' || CAST(:id AS text), 'bench',
          currval(pg_get_serial_sequence('events', 'position')));
COMMIT;
`,
  // The same creates, `BATCH` to a transaction: one multi-row insert of the events and one of
  // their plants rows, what group commit can reach at best.
  createBatch: `
\\set owner random(1, 100000)
\\set id random(1, 90000000000000000)
BEGIN;
WITH appended AS (
  INSERT INTO events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  SELECT 'plant:' || CAST(CAST(:id AS bigint) * 100 + g AS text) || ':' || 'ceiling-' || CAST((:owner + g) % 100000 AS text), 1,
         'PlantCreated', 1,
         jsonb_build_object('id', CAST(CAST(:id AS bigint) * 100 + g AS text), 'name', 'plant ' || CAST(:id AS text), 'tag', 'bench'),
         jsonb_build_object('owner', 'ceiling-' || CAST((:owner + g) % 100000 AS text), 'requestId', 'pgbench'), now()
  FROM generate_series(1, BATCH) AS g
  ORDER BY g
  RETURNING position, data, metadata)
INSERT INTO plants (owner, id, name, tag, position)
  SELECT metadata->>'owner', CAST(data->>'id' AS bigint), data->>'name', data->>'tag', position FROM appended;
COMMIT;
`,
  // A page: the first 20 plants of one of the seeded readers (and whether a 21st follows).
  page: `
\\set reader random(0, 199)
SELECT name, tag, position FROM plants WHERE owner = 'reader-' || CAST(:reader AS text) AND position >= 0 ORDER BY position LIMIT 21;
`,
}

export type CeilingRun = {
  mode: 'create' | 'createBatch' | 'page'
  url: string
  clients: number
  seconds: number
  // Creates per transaction in `createBatch`.
  batch?: number
}

export type CeilingResult = {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  errors: number
  // CPU per operation, in ms: pgbench's own client, and the PostgreSQL backends serving it.
  clientCpuMs: number
  databaseCpuMs: number
}

export async function runPgbench(run: CeilingRun, admin: postgres.Sql): Promise<CeilingResult> {
  const directory = mkdtempSync(join(tmpdir(), 'plant-pgbench-'))
  try {
    const script = join(directory, `${run.mode}.sql`)
    await Bun.write(script, SCRIPTS[run.mode].replaceAll('BATCH', String(run.batch ?? 1)))
    const database = new URL(run.url).pathname.slice(1)
    const meter = await meterCpu(admin, database)
    const child = Bun.spawn(
      [
        'pgbench',
        '--no-vacuum',
        '--protocol=prepared',
        `--client=${run.clients}`,
        '--jobs=1',
        `--time=${run.seconds}`,
        `--file=${script}`,
        '--log',
        `--log-prefix=${join(directory, 'tx')}`,
        run.url,
      ],
      { cwd: directory, stdout: 'pipe', stderr: 'pipe' },
    )
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    const cpu = await meter.stop()
    const clientMs = Number(child.resourceUsage()?.cpuTime.total ?? 0) / 1000
    const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1])
    if (exitCode !== 0 || !Number.isFinite(tps))
      throw new Error(`pgbench failed (${exitCode}): ${stderr}${stdout}`)
    const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0)
    const latencies = transactionLatenciesMs(directory)
    // In `createBatch`, an operation is a create: the transaction's latency is each of its creates'.
    const perTransaction = run.mode === 'createBatch' ? (run.batch ?? 1) : 1
    const operations = latencies.length * perTransaction
    return {
      requestsPerSecond: tps * perTransaction,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      errors: failed,
      clientCpuMs: clientMs / operations,
      databaseCpuMs: cpu.databaseMs / operations,
    }
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}

// pgbench's per-transaction log: "client transaction latency_us script epoch epoch_us" a line.
function transactionLatenciesMs(directory: string): number[] {
  const latencies: number[] = []
  for (const file of readdirSync(directory).filter((name) => name.startsWith('tx'))) {
    for (const line of readFileSync(join(directory, file), 'utf8').split('\n')) {
      const latency = Number(line.split(' ')[2])
      if (line.length > 0 && Number.isFinite(latency)) latencies.push(latency / 1000)
    }
  }
  return latencies.sort((a, b) => a - b)
}
