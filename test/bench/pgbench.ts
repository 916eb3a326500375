import { Buffer } from 'node:buffer'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { percentile } from '../support/percentiles.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { meterCpu } from './cpu.ts'

// The database ceilings, independent of the service's design: pgbench (prepared statements, as
// many clients as the service's pool) on the project's migrated schema, running the least any
// event-sourced service must do for the job, with no HTTP, JSON or JWT and no driver of ours.
// What the log keeps of an owner is sealed outside the database (docs/keys.md): the ceiling's
// creates send values of the sizes the service's do, opaque to PostgreSQL, and do no crypto.
const SEALED_DATA = `{"gcm": "${'A'.repeat(96)}"}`
const SEALED_METADATA = `"gcm": "${'B'.repeat(88)}"`
export const CEILING_OWNERS = 100_000

const SCRIPTS = {
  // A create: one transaction that takes the owner's lock, checks the owner's key is live (a
  // probe of its primary key, FOR SHARE), appends the PlantCreated event (pseudonym, sealed data
  // and request id, stream id) and inserts its plants row. Ids are unique in practice (random over
  // 2^63, owners random over 100,000, each with a key: seedCeilingOwners). pgbench takes a colon
  // before a letter for a variable, even inside a literal: hence ':' || 'ceiling-'.
  create: `
\\set owner random(1, ${CEILING_OWNERS})
\\set id random(1, 9000000000000000000)
BEGIN;
WITH locked AS (
  SELECT pg_advisory_xact_lock(hashtextextended('ceiling-' || CAST(:owner AS text), 0)) AS lock),
kept AS (
  SELECT pseudonym FROM owner_keys WHERE pseudonym = 'p' || CAST(:owner AS text) AND NOT erasing
    AND (SELECT count(lock) FROM locked) IS NOT NULL FOR SHARE),
appended AS (
  INSERT INTO events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  SELECT 'plant:' || CAST(:id AS text), 1, 'PlantCreated', 1, '${SEALED_DATA}',
         CAST('{"pseudonym": "' || pseudonym || '", ${SEALED_METADATA}}' AS jsonb), now()
  FROM kept
  RETURNING position)
INSERT INTO plants (owner, id, name, tag, position)
  SELECT 'ceiling-' || CAST(:owner AS text), CAST(:id AS bigint), 'plant ' || CAST(:id AS text), 'bench', a.position
  FROM appended a;
COMMIT;
`,
  // The same creates, \`BATCH\` to a transaction: one statement for the locks, the key probes,
  // events and plants rows of the batch, what group commit can reach at best.
  createBatch: `
\\set owner random(1, ${CEILING_OWNERS})
\\set id random(1, 90000000000000000)
BEGIN;
WITH source AS (
  SELECT 'ceiling-' || CAST((:owner + g) % ${CEILING_OWNERS} + 1 AS text) AS owner,
         'p' || CAST((:owner + g) % ${CEILING_OWNERS} + 1 AS text) AS pseudonym, CAST(:id AS bigint) * 100 + g AS id, g
  FROM generate_series(1, BATCH) AS g),
locked AS (
  SELECT count(pg_advisory_xact_lock(key)) AS locks
  FROM (SELECT DISTINCT hashtextextended(owner, 0) AS key FROM source ORDER BY 1) AS keys),
kept AS (
  SELECT k.pseudonym FROM (SELECT DISTINCT pseudonym FROM source) AS p
  CROSS JOIN LATERAL (SELECT pseudonym FROM owner_keys WHERE pseudonym = p.pseudonym AND NOT erasing FOR SHARE) AS k
  WHERE (SELECT locks FROM locked) IS NOT NULL),
appended AS (
  INSERT INTO events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  SELECT 'plant:' || CAST(s.id AS text), 1, 'PlantCreated', 1, '${SEALED_DATA}',
         CAST('{"pseudonym": "' || s.pseudonym || '", ${SEALED_METADATA}}' AS jsonb), now()
  FROM source s WHERE s.pseudonym IN (SELECT pseudonym FROM kept) ORDER BY g
  RETURNING position, stream_id)
INSERT INTO plants (owner, id, name, tag, position)
  SELECT s.owner, s.id, 'plant ' || CAST(:id AS text), 'bench', a.position
  FROM appended a JOIN source s ON a.stream_id = 'plant:' || CAST(s.id AS text);
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

// The ceiling's owners, each with a stored key made and wrapped as the service makes one (under the
// bench's key-encryption key: a service started on the store checks it can open them), so that a
// ceiling create finds its owner's key as most creates do.
export async function seedCeilingOwners(sql: postgres.Sql): Promise<void> {
  const keyring = createKeyring(TEST_KEYS)
  const BATCH = 10_000
  for (let from = 1; from <= CEILING_OWNERS; from += BATCH) {
    const numbers = Array.from(
      { length: Math.min(BATCH, CEILING_OWNERS - from + 1) },
      (_, index) => from + index,
    )
    const wrapped = numbers.map((n) =>
      Buffer.from(keyring.wrap({ pseudonym: `p${n}`, raw: keyring.make().raw })).toString('hex'),
    )
    await sql`
      insert into owner_keys (pseudonym, owner, key)
      select 'p' || n, 'ceiling-' || n, decode(key, 'hex')
      from unnest(${numbers}::int[], ${wrapped}::text[]) as k(n, key)
      on conflict do nothing`
  }
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
