import { Elysia } from 'elysia'
import type { Database } from '../store/database.ts'
import type { Metrics } from './metrics.ts'
import { readStoreState } from './store-state.ts'

// Prometheus text exposition. The store is read at scrape time; while the database is down the
// HTTP metrics are still served, with plant_store_database_up 0.
export function metricsRoute({ db, metrics }: { db: Database; metrics: Metrics }) {
  return new Elysia({ name: 'metrics' }).get(
    '/metrics',
    async () => {
      metrics.recordStore(await readStoreState(db))
      return new Response(await metrics.registry.metrics(), {
        headers: { 'content-type': metrics.registry.contentType },
      })
    },
    { detail: { hide: true } },
  )
}
