import { readFile } from 'node:fs/promises'
import { median } from './percentiles.ts'

export type MemorySample = { atMs: number; rssMb: number }

// Resident set size of a process in MB, from /proc/<pid>/status (Linux only).
export async function residentMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1]
  if (kb === undefined) throw new Error(`no VmRSS for process ${pid}`)
  return Number(kb) / 1024
}

// Samples a process's RSS every `everyMs` until stopped; `atMs` is on the performance.now() clock.
export function sampleResidentMemory(pid: number, everyMs = 250) {
  const samples: MemorySample[] = []
  const sample = async () => {
    try {
      samples.push({ atMs: performance.now(), rssMb: await residentMb(pid) })
    } catch {
      // The process is gone (or not yet visible); the samples so far stand.
    }
  }
  void sample()
  const timer = setInterval(sample, everyMs)
  return {
    samples,
    stop: () => clearInterval(timer),
  }
}

// Samples a process's RSS every `everyMs` until stopped; stop() gives the peak in MB (NaN when no
// sample was read).
export function peakResidentMemory(pid: number, everyMs = 50) {
  const sampling = sampleResidentMemory(pid, everyMs)
  return {
    stop: () => {
      sampling.stop()
      return sampling.samples.length === 0 ? Number.NaN : Math.max(...sampling.samples.map((s) => s.rssMb))
    },
  }
}

// The median RSS over the `windowMs` that end at `endMs`: one sample can sit on a GC sawtooth's
// peak or trough, a few seconds' median does not.
export function settledRss(samples: MemorySample[], endMs: number, windowMs: number): number {
  return median(samples.filter((s) => s.atMs > endMs - windowMs && s.atMs <= endMs).map((s) => s.rssMb))
}
