import { readFileSync } from 'node:fs'
import type postgres from 'postgres'

// CPU time from /proc (Linux), in milliseconds: of one process, and of the PostgreSQL backends
// serving one database, so that each side of a run is charged for its own work only.
const TICK_MS = 1000 / Number(Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim() || 100)

export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name may hold spaces and parentheses; the fields after it are plain numbers.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

function tryProcessCpuMs(pid: number): number | undefined {
  try {
    return processCpuMs(pid)
  } catch {
    return undefined
  }
}

export type CpuMeter = { stop: () => Promise<{ processMs: number; databaseMs: number }> }

// Starts counting the CPU of `pid` (if any) and of every backend connected to `database`, other
// than the meter's own. Backends are polled, so one that ends between polls is charged up to the
// last poll (at most `everyMs` of its work is missed); one that starts is charged from zero.
export async function meterCpu(
  sql: postgres.Sql,
  database: string,
  pid?: number,
  everyMs = 100,
): Promise<CpuMeter> {
  const processStart = pid === undefined ? 0 : processCpuMs(pid)
  const baseline = new Map<number, number>()
  const latest = new Map<number, number>()
  const poll = async () => {
    const rows = await sql<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`
    for (const { pid: backend } of rows) {
      const cpu = tryProcessCpuMs(backend)
      if (cpu !== undefined) latest.set(backend, cpu)
    }
  }
  await poll()
  for (const [backend, cpu] of latest) baseline.set(backend, cpu)
  let polling = Promise.resolve()
  const timer = setInterval(() => {
    polling = polling.then(poll).catch(() => {})
  }, everyMs)
  return {
    stop: async () => {
      clearInterval(timer)
      await polling
      await poll()
      let databaseMs = 0
      for (const [backend, cpu] of latest) databaseMs += cpu - (baseline.get(backend) ?? 0)
      const processMs = pid === undefined ? 0 : (tryProcessCpuMs(pid) ?? processStart) - processStart
      return { processMs, databaseMs }
    },
  }
}
