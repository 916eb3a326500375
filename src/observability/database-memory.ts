import { readFileSync } from 'node:fs'
import { Gauge, type Registry } from 'prom-client'

// The memory of the database server the service runs itself, read at scrape time: the sum of its
// processes' proportional set sizes (PSS, from /proc/<pid>/smaps_rollup), so that the pages they
// share (PostgreSQL's shared buffers, its binary) count once, not once per process.
export function databaseMemoryGauge(registry: Registry, processIds: () => Promise<number[]>): void {
  new Gauge({
    name: 'plant_store_database_memory_bytes',
    help: "Proportional set size (PSS) of the embedded PostgreSQL server's processes, summed",
    registers: [registry],
    async collect() {
      const sizes = (await processIds()).map(proportionalSetBytes)
      const known = sizes.filter((size) => size !== undefined)
      // A process that has ended counts nothing. With none readable (Deno reads no /proc/<pid>/
      // file without --allow-all) the figure is unknown: no sample, rather than a NaN that a
      // scraper's sums and alerts would carry on.
      if (known.length === 0) this.remove()
      else this.set(known.reduce((sum, size) => sum + size, 0))
    },
  })
}

function proportionalSetBytes(pid: number): number | undefined {
  try {
    const kilobytes = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1]
    return kilobytes === undefined ? undefined : Number(kilobytes) * 1024
  } catch {
    return undefined
  }
}
