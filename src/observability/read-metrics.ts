import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { ReplicaStatus } from '../replicas/replica-health.ts'

// Where listings and change streams are read (docs/operating.md, Scaling out), in the app's
// registry; replica states are read at scrape time.
export function createReadMetrics(registry: Registry, statuses: () => ReplicaStatus[]) {
  const registers = [registry]
  const reads = new Counter({
    name: 'plant_store_reads_total',
    help: "Listings served, by source: 'primary' or the replica's host:port/database",
    labelNames: ['source'] as const,
    registers,
  })
  // Apart from listings, so that a listing count (and what reads it) keeps its meaning.
  const changeReads = new Counter({
    name: 'plant_store_change_reads_total',
    help: "Change streams' reads (a head, a catch-up batch, an owner's pseudonym), by source: 'primary' or the replica's host:port/database",
    labelNames: ['source'] as const,
    registers,
  })
  new Gauge({
    name: 'plant_store_read_replica_lag_seconds',
    help: 'How far each read replica is behind the primary (the last value known while it is down)',
    labelNames: ['replica'] as const,
    registers,
    collect() {
      for (const { name, lagMs } of statuses()) {
        if (lagMs !== undefined) this.set({ replica: name }, lagMs / 1000)
      }
    },
  })
  new Gauge({
    name: 'plant_store_read_replica_up',
    help: '1 while a read replica answers its checks as a standby, else 0',
    labelNames: ['replica'] as const,
    registers,
    collect() {
      for (const { name, up } of statuses()) this.set({ replica: name }, up ? 1 : 0)
    },
  })
  const waits = new Histogram({
    name: 'plant_store_read_position_wait_seconds',
    help: 'For listings that sent Plant-Store-Position: time waited before the read that served it began (for a replica to apply it, or until the primary was asked)',
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 10],
    registers,
  })
  return {
    read: (source: string, waitedMs?: number) => {
      reads.inc({ source })
      if (waitedMs !== undefined) waits.observe(waitedMs / 1000)
    },
    changeRead: (source: string) => {
      changeReads.inc({ source })
    },
  }
}
