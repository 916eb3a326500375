import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { replies, reply } from '../openapi/replies.ts'
import type { Database } from '../store/database.ts'
import type { Metrics } from './metrics.ts'
import { readStoreState } from './store-state.ts'

const scraped = replies({
  200: reply(Type.String(), 'Prometheus text exposition', { contentType: 'text/plain' }),
})

// Prometheus text exposition. The store is read at scrape time; while the database is down the
// HTTP metrics are still served, with plant_store_database_up 0.
export function metricsRoute({ db, metrics }: { db: Database; metrics: Metrics }) {
  return new Elysia({ name: 'metrics' }).get('/metrics', () => scrape(db, metrics), {
    response: scraped.response,
    detail: { summary: 'Prometheus metrics', tags: ['metrics'], security: [], responses: scraped.responses },
  })
}

async function scrape(db: Database, metrics: Metrics) {
  metrics.recordStore(await readStoreState(db))
  return new Response(await metrics.registry.metrics(), {
    headers: { 'content-type': metrics.registry.contentType },
  })
}
