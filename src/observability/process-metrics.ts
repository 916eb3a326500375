import { readFileSync } from 'node:fs'
import process from 'node:process'
import { collectDefaultMetrics, Gauge, type Registry } from 'prom-client'
import { databaseMemoryGauge } from './database-memory.ts'

export type ProcessMetricsDeps = {
  registry: Registry
  // The ids of the database server's processes, where the service runs its own (the embedded
  // default); their memory is then shown beside the service's.
  databaseProcessIds?: () => Promise<number[]>
}

// prom-client reads these from /proc/self, which Deno opens only with --allow-all: there they would
// read 0.
const FROM_PROC_SELF = [
  'process_resident_memory_bytes',
  'process_virtual_memory_bytes',
  'process_heap_bytes',
  'process_open_fds',
  'process_max_fds',
]
// JavaScriptCore has no V8 heap spaces: Bun reports one and twelve zeros, at 2.4 ms a scrape.
const HEAP_SPACES = [
  'nodejs_heap_space_size_total_bytes',
  'nodejs_heap_space_size_used_bytes',
  'nodejs_heap_space_size_available_bytes',
]

// The process's own figures, which every dashboard starts from: CPU, memory, event-loop delay,
// heap, open files (prom-client's default metrics), kept to those the runtime really measures.
// Once per process: the event-loop monitor runs from here on.
export function collectProcessMetrics({ registry, databaseProcessIds }: ProcessMetricsDeps): void {
  collectDefaultMetrics({ register: registry })
  if (process.versions.bun !== undefined) for (const name of HEAP_SPACES) registry.removeSingleMetric(name)
  if (!canRead('/proc/self/status')) {
    for (const name of FROM_PROC_SELF) registry.removeSingleMetric(name)
    new Gauge({
      name: 'process_resident_memory_bytes',
      help: 'Resident memory size in bytes.',
      registers: [registry],
      collect() {
        this.set(process.memoryUsage.rss())
      },
    })
  }
  if (databaseProcessIds) databaseMemoryGauge(registry, databaseProcessIds)
}

function canRead(path: string): boolean {
  try {
    readFileSync(path)
    return true
  } catch {
    return false
  }
}
