import { readFileSync } from 'node:fs'

// Resident set size of a process in MB, from /proc (Linux).
export function residentMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
  return kb / 1024
}

// Samples a process's resident memory until stopped; stop() gives the peak in MB.
export function sampleMemory(pid: number, everyMs = 50) {
  let peak = 0
  const sample = () => {
    try {
      // Right after a spawn /proc may not show VmRSS yet (NaN): such samples are skipped.
      const now = residentMb(pid)
      if (now > peak) peak = now
    } catch {
      // The process has gone; keep the peak seen so far.
    }
  }
  sample()
  const timer = setInterval(sample, everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      return peak > 0 ? peak : Number.NaN
    },
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

export function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] as number
}
