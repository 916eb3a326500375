import { readdirSync, readFileSync } from 'node:fs'

// Proportional set size (Linux): a page shared by n processes counts 1/n in each, so the sum over
// the service and its PostgreSQL processes counts PostgreSQL's shared buffers once, where summed
// resident sizes would count them once per process.
export function pssMb(pid: number): number {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
    return Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0) / 1024
  } catch {
    return 0
  }
}

// `pid` and every process below it (a test runner's PostgreSQL hangs below its watchdog shell).
export function processTree(pid: number): number[] {
  const parents = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      parents.set(parent, [...(parents.get(parent) ?? []), Number(entry)])
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid]
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i] as number) ?? []))
  return tree
}

export function treePssMb(pid: number): number {
  return processTree(pid).reduce((sum, each) => sum + pssMb(each), 0)
}

// Samples the summed PSS of a process tree until stopped; stop() gives the peak and the last, in MB.
export function sampleTreePss(pid: number, everyMs = 100) {
  let peak = 0
  let last = 0
  const sample = () => {
    last = treePssMb(pid)
    if (last > peak) peak = last
  }
  sample()
  const timer = setInterval(sample, everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      sample()
      return { peak, last }
    },
  }
}
