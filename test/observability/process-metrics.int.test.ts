import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import { Registry } from 'prom-client'
import { collectProcessMetrics } from '../../src/observability/process-metrics.ts'
import { type PrimaryWithReplica, startPrimaryWithReplica } from '../support/postgres-replica.ts'

// /metrics shows the process's own figures (prom-client's defaults, as far as the runtime measures
// them) and, where the service runs its own database server, that server's memory: the summed PSS
// of its processes, which counts the pages they share (shared buffers, the binary) once.

function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.slice(name.length + 1))
}

// Resident and proportional sizes of a process, in bytes, as the kernel gives them.
function sizesOf(pid: number): { rss: number; pss: number } {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
  const kilobytes = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(rollup)?.[1])
  return { rss: kilobytes('Rss') * 1024, pss: kilobytes('Pss') * 1024 }
}

describe('process metrics', () => {
  const registry = new Registry()
  beforeAll(() => collectProcessMetrics({ registry }))

  test("given the service's process, then its CPU, resident memory and event-loop delay are shown", async () => {
    await Bun.sleep(50) // the event-loop monitor has a few samples
    const text = await registry.metrics()
    const resident = sample(text, 'process_resident_memory_bytes') ?? 0
    const status = readFileSync('/proc/self/status', 'utf8')
    const vmRss = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]) * 1024
    expect(resident).toBeGreaterThan(0.5 * vmRss)
    expect(resident).toBeLessThan(2 * vmRss)
    expect(sample(text, 'process_cpu_seconds_total')).toBeGreaterThan(0)
    expect(sample(text, 'process_start_time_seconds')).toBeGreaterThan(Date.now() / 1000 - 3600)
    expect(sample(text, 'process_open_fds')).toBeGreaterThan(2)
    expect(sample(text, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThan(0)
    expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0)
    // Bun's JavaScriptCore has no V8 heap spaces: they are left out rather than shown as zeros.
    expect(text).not.toContain('nodejs_heap_space_size')
    // No database server of the service's own, so no figure for one.
    expect(text).not.toContain('plant_store_database_memory_bytes')
  })
})

describe('the memory of a database server the service runs', () => {
  let servers: PrimaryWithReplica
  let postmaster: number
  beforeAll(async () => {
    servers = await startPrimaryWithReplica()
    const sql = postgres(servers.primaryUrl, { max: 4, onnotice: () => {} })
    // Some work, so that backends and shared buffers hold pages.
    await sql`create table filler as select n, repeat('x', 200) as text from generate_series(1, 50000) as n`
    await Promise.all([1, 2, 3].map(() => sql`select count(*) from filler`))
    // The postmaster is the parent of every backend.
    const [row] = await sql`select pg_backend_pid() as pid`
    const stat = readFileSync(`/proc/${row?.pid}/stat`, 'utf8')
    postmaster = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    await sql.end()
  })
  afterAll(() => servers.stop())

  // The postmaster and its children (checkpointer, writer, backends…), as the embedded default's
  // handle would list them.
  const serverProcesses = () => [
    postmaster,
    ...Bun.spawnSync(['pgrep', '-P', String(postmaster)])
      .stdout.toString()
      .split('\n')
      .filter((line) => line !== '')
      .map(Number),
  ]

  test("given the server's processes, then the gauge is the sum of their PSS, which counts shared pages once", async () => {
    // given
    const registry = new Registry()
    collectProcessMetrics({ registry, databaseProcessIds: async () => serverProcesses() })
    // when
    const shown = sample(await registry.metrics(), 'plant_store_database_memory_bytes') ?? 0
    // then
    const sizes = serverProcesses().map(sizesOf)
    const pss = sizes.reduce((sum, size) => sum + size.pss, 0)
    const rss = sizes.reduce((sum, size) => sum + size.rss, 0)
    expect(serverProcesses().length).toBeGreaterThan(3)
    expect(shown).toBeGreaterThan(0.9 * pss)
    expect(shown).toBeLessThan(1.1 * pss)
    expect(shown).toBeLessThan(rss)
  })

  test('given a process that has ended among them, then it counts nothing, and with none left there is no sample', async () => {
    // given
    const ended = Bun.spawn(['true'])
    await ended.exited
    let ids = () => [...serverProcesses(), ended.pid]
    const registry = new Registry()
    collectProcessMetrics({ registry, databaseProcessIds: async () => ids() })
    // then
    const withEnded = sample(await registry.metrics(), 'plant_store_database_memory_bytes') ?? 0
    const pss = serverProcesses()
      .map(sizesOf)
      .reduce((sum, size) => sum + size.pss, 0)
    expect(withEnded).toBeGreaterThan(0.9 * pss)
    expect(withEnded).toBeLessThan(1.1 * pss)
    // (as under Deno, which may not read /proc/<pid>/ without --allow-all): a scraper sees no value,
    // rather than a NaN that its sums and alerts would carry on
    ids = () => [ended.pid]
    const unknown = await registry.metrics()
    expect(unknown).toContain('# TYPE plant_store_database_memory_bytes gauge')
    expect(sample(unknown, 'plant_store_database_memory_bytes')).toBeUndefined()
    // and once the processes can be read again, the figure is back
    ids = () => serverProcesses()
    expect(sample(await registry.metrics(), 'plant_store_database_memory_bytes')).toBeGreaterThan(0)
  })
})
