import type { Registry } from 'prom-client'
import type { ReadReplicasConfig } from '../config/config.ts'
import { type Database, openPostgres, type PostgresSettings } from '../database/database.ts'
import { createReadMetrics } from '../observability/read-metrics.ts'
import { type ReadPlants, replicaReads } from '../plants/listing-source.ts'
import { type ReplicaSet, watchReplicas } from '../replicas/replica-health.ts'
import type { Logger } from '../shared/logger.ts'
import { within } from '../shared/time-limit.ts'

export type ReplicaReads = {
  readPlants: ReadPlants
  // What the change streams read from (changes/changes-service.ts): the same replicas and wait.
  changes: { set: ReplicaSet; waitMs: number; onRead: (source: string) => void }
  close: () => Promise<void>
}

export type ReplicaReadsDeps = {
  config: ReadReplicasConfig
  // The primary's pool settings, which each replica's pool takes too.
  settings: Omit<PostgresSettings, 'url'>
  primary: Database
  logger: Logger
  registry: Registry
}

// A replica that does not answer is given up on quickly: the read goes elsewhere.
const REPLICA_CONNECT_TIMEOUT_SECONDS = 2
const FIRST_CHECK_WAIT_MS = 2000

// Listings and change streams from the replicas (docs/operating.md, Scaling out). Starts once the
// replicas have been checked, or after a short wait: a replica that is down never holds up the
// start, it only serves no reads.
export async function startReplicaReads({
  config,
  settings,
  primary,
  logger,
  registry,
}: ReplicaReadsDeps): Promise<ReplicaReads> {
  const replicas = watchReplicas({
    primary,
    replicas: config.urls.map((url) => ({
      name: replicaName(url),
      handle: openPostgres({ ...settings, url, connectTimeoutSeconds: REPLICA_CONNECT_TIMEOUT_SECONDS }),
    })),
    maxLagMs: config.maxLagMs,
    logger,
  })
  const metrics = createReadMetrics(registry, replicas.statuses)
  await within(replicas.firstCheck, FIRST_CHECK_WAIT_MS)
  logger.info({ replicas: replicas.statuses() }, 'reading from replicas')
  return {
    readPlants: replicaReads({ primary, replicas, waitMs: config.waitMs, onRead: metrics.read }),
    changes: { set: replicas, waitMs: config.waitMs, onRead: metrics.changeRead },
    close: replicas.close,
  }
}

// host:port/database, never the credentials: it names the replica in metrics and logs.
function replicaName(url: string): string {
  const { hostname, port, pathname } = new URL(url)
  return `${hostname}:${port || '5432'}${pathname}`
}
