import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type postgres from 'postgres'
import { newKeyEncryptionKey, sessionKeys } from '../../src/keys/key-encryption-keys.ts'
import { meterCpu } from './cpu.ts'
import { percentile } from './memory.ts'

// The database ceilings, independent of the service's design: pgbench (prepared statements, as
// many clients as the service's pool) on the project's migrated schema, running the least any
// event-sourced service must do for the job, with no HTTP, JSON or JWT and no driver of ours.
const CEILING_KEY = newKeyEncryptionKey()

const SCRIPTS = {
  // A create: one transaction that finds or makes the owner's key, appends the PlantCreated event
  // sealed under it (docs/erasure.md: pseudonym, sealed data and request id, HMAC stream id) and
  // inserts its plants row. Ids are unique in practice (random over 2^63, owners random over
  // 100,000). pgbench takes a colon before a letter for a variable, even inside a literal: hence
  // ':' || 'ceiling-'.
  create: `
\\set owner random(1, 100000)
\\set id random(1, 9000000000000000000)
BEGIN;
WITH source AS (
  SELECT 'ceiling-' || CAST(:owner AS text) AS owner, CAST(:id AS bigint) AS id),
found AS (
  SELECT k.pseudonym, k.owner, plant_store_unwrap(k.key) AS key FROM owner_keys k, source s WHERE k.owner = s.owner AND NOT k.erasing),
made AS (
  INSERT INTO owner_keys (pseudonym, owner, key)
  SELECT encode(gen_random_bytes(16), 'hex'), s.owner, plant_store_wrap(gen_random_bytes(32)) FROM source s
  WHERE NOT EXISTS (SELECT 1 FROM found)
  ON CONFLICT (owner) WHERE NOT erasing DO UPDATE SET owner = excluded.owner
  RETURNING pseudonym, owner, plant_store_unwrap(key) AS key),
keys AS (SELECT * FROM found UNION ALL SELECT * FROM made),
appended AS (
  INSERT INTO events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  SELECT plant_store_stream_id(CAST(s.id AS text), k.key), 1, 'PlantCreated', 1,
         jsonb_build_object('sealed', plant_store_seal(CAST(
           jsonb_build_object('id', CAST(s.id AS text), 'name', 'plant ' || CAST(s.id AS text), 'tag', 'bench') AS text), k.key)),
         jsonb_build_object('pseudonym', k.pseudonym, 'sealed', plant_store_seal('{"requestId": "pgbench"}', k.key)), now()
  FROM source s, keys k
  RETURNING position)
INSERT INTO plants (owner, id, name, tag, position)
  SELECT s.owner, s.id, 'plant ' || CAST(s.id AS text), 'bench', a.position FROM source s, appended a;
COMMIT;
`,
  // The same creates, `BATCH` to a transaction: one statement for the keys, events and plants
  // rows of the batch, what group commit can reach at best.
  createBatch: `
\\set owner random(1, 100000)
\\set id random(1, 90000000000000000)
BEGIN;
WITH source AS (
  SELECT 'ceiling-' || CAST((:owner + g) % 100000 AS text) AS owner, CAST(:id AS bigint) * 100 + g AS id, g
  FROM generate_series(1, BATCH) AS g),
found AS (
  SELECT k.pseudonym, k.owner, plant_store_unwrap(k.key) AS key FROM owner_keys k WHERE k.owner IN (SELECT owner FROM source) AND NOT k.erasing),
made AS (
  INSERT INTO owner_keys (pseudonym, owner, key)
  SELECT encode(gen_random_bytes(16), 'hex'), o.owner, plant_store_wrap(gen_random_bytes(32))
  FROM (SELECT DISTINCT owner FROM source) o WHERE NOT EXISTS (SELECT 1 FROM found f WHERE f.owner = o.owner)
  ON CONFLICT (owner) WHERE NOT erasing DO UPDATE SET owner = excluded.owner
  RETURNING pseudonym, owner, plant_store_unwrap(key) AS key),
keys AS (SELECT * FROM found UNION ALL SELECT * FROM made),
sealed AS (
  SELECT s.owner, s.id, s.g, plant_store_stream_id(CAST(s.id AS text), k.key) AS stream_id,
         jsonb_build_object('sealed', plant_store_seal(CAST(
           jsonb_build_object('id', CAST(s.id AS text), 'name', 'plant ' || CAST(:id AS text), 'tag', 'bench') AS text), k.key)) AS data,
         jsonb_build_object('pseudonym', k.pseudonym, 'sealed', plant_store_seal('{"requestId": "pgbench"}', k.key)) AS metadata
  FROM source s JOIN keys k ON k.owner = s.owner),
appended AS (
  INSERT INTO events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  SELECT stream_id, 1, 'PlantCreated', 1, data, metadata, now() FROM sealed ORDER BY g
  RETURNING position, stream_id)
INSERT INTO plants (owner, id, name, tag, position)
  SELECT sealed.owner, sealed.id, 'plant ' || CAST(:id AS text), 'bench', appended.position
  FROM appended JOIN sealed USING (stream_id);
COMMIT;
`,
  // A page: the first 20 plants of one of the seeded readers (and whether a 21st follows).
  page: `
\\set reader random(0, 199)
SELECT name, tag, position FROM plants WHERE owner = 'reader-' || CAST(:reader AS text) AND position >= 0 ORDER BY position LIMIT 21;
`,
  // What a 304 must read at least: the reader's head and generation, two index probes.
  version: `
\\set reader random(0, 199)
SELECT (SELECT max(position) FROM plants WHERE owner = 'reader-' || CAST(:reader AS text)),
       (SELECT generation FROM owner_generations WHERE owner = 'reader-' || CAST(:reader AS text));
`,
}

export type CeilingRun = {
  mode: 'create' | 'createBatch' | 'page' | 'version'
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
      {
        cwd: directory,
        stdout: 'pipe',
        stderr: 'pipe',
        // The sessions unwrap owners' keys as the service's do: the key-encryption keys go in
        // the startup message.
        env: { ...process.env, PGOPTIONS: `-c plant_store.keks=${sessionKeys([CEILING_KEY])}` },
      },
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
