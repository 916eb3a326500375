import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import { Elysia } from 'elysia'
import { type Database, rowsOf } from '../database/database.ts'
import { liveKeys, pseudonymOf } from '../event-log/pseudonyms.ts'
import { events, plants } from '../event-log/schema.ts'
import { replies, reply } from '../openapi/replies.ts'
import { within } from '../shared/time-limit.ts'
import type { Metrics, StoreState } from './metrics.ts'

const READ_TIMEOUT_MS = 1000
// The projection's lag is looked for among this many events at most below the head: a log whose
// newest rows were all erased must not be read whole at every scrape.
const LAG_WINDOW = 100_000

const scraped = replies({
  200: reply(Type.String(), 'Prometheus text exposition', { contentType: 'text/plain' }),
})

// Prometheus text exposition. The store is read at scrape time; while the database is down (does
// not answer within READ_TIMEOUT_MS) the HTTP metrics are still served, with plant_store_database_up 0.
export function metricsRoute({ db, metrics }: { db: Database; metrics: Metrics }) {
  return new Elysia({ name: 'metrics' }).get('/metrics', () => scrape(db, metrics), {
    response: scraped.response,
    detail: {
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      tags: ['metrics'],
      security: [],
      responses: scraped.responses,
    },
  })
}

async function scrape(db: Database, metrics: Metrics) {
  const state = readStoreState(db).catch(() => undefined)
  metrics.recordStore(await within(state, READ_TIMEOUT_MS))
  return new Response(await metrics.registry.metrics(), {
    headers: { 'content-type': metrics.registry.contentType },
  })
}

// postgres.js does not expose its pool, so connections are counted by the server: those with this
// application's name on this database, less the one running this query.
async function readStoreState(db: Database): Promise<StoreState> {
  const positions = rowsOf<{ head: string | null; projected: string | null; lag: number }>(
    await db.execute(sql`with positions as (select
        (select max(position) from ${events}) as head,
        (select max(position) from ${plants}) as projected)
      select head::text as head, projected::text as projected, (
        select count(*)::int from ${events} as e
        where e.position > greatest(coalesce(projected, 0), head - ${LAG_WINDOW})
          and e.type = 'PlantCreated'
          and exists (select 1 from ${liveKeys} as k where k.pseudonym = ${pseudonymOf(sql`e`)})) as lag
      from positions`),
  )[0]
  const activity = rowsOf<{ state: string | null; n: number }>(
    await db.execute(sql`select coalesce(state, 'unknown') as state, count(*)::int as n
      from pg_stat_activity
      where datname = current_database()
        and application_name = current_setting('application_name')
        and application_name <> ''
        and pid <> pg_backend_pid()
      group by 1`),
  )
  return {
    headPosition: Number(positions?.head ?? 0),
    projectedPosition: Number(positions?.projected ?? 0),
    lagEvents: Number(positions?.lag ?? 0),
    connections: Object.fromEntries(activity.map((row) => [row.state ?? 'unknown', row.n])),
  }
}
