import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { RequestRecord } from './request-observation.ts'

export type StoreState = {
  headPosition: number
  projectedPosition: number
  // Events after the projection's newest row that make a row (a PlantCreated of an owner who can
  // be read): an OwnerErased, or an erased owner's plant, makes none and is never behind.
  lagEvents: number
  // PostgreSQL connections of this application, by state (`active`, `idle`, …).
  connections: Record<string, number>
}

export type Metrics = ReturnType<typeof createMetrics>

// Every metric lives in the registry handed in: two apps in one process never share counters.
export function createMetrics(registry: Registry) {
  const registers = [registry]
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers })
  const requests = new Counter({
    name: 'plant_store_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  })
  const duration = new Histogram({
    name: 'plant_store_http_request_duration_seconds',
    help: 'Time from receiving a request to handing back its response (a streamed body may go on)',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  })
  const inFlight = gauge('plant_store_http_requests_in_flight', 'Requests received and not yet answered')
  const eventsAppended = new Counter({
    name: 'plant_store_events_appended_total',
    help: 'Events this process appended to the log (sum over instances for the service)',
    registers,
  })
  const head = gauge('plant_store_events_head_position', 'Position of the newest event in the log')
  const projected = gauge(
    'plant_store_projection_position',
    'Position of the newest event reflected in the plants projection',
  )
  const lag = gauge(
    'plant_store_projection_lag_events',
    "Events after the projection's newest row that make a row and lack it (of the newest 100,000); above 0 only while the projection catches up",
  )
  const databaseUp = gauge('plant_store_database_up', '1 when the database answered the last scrape, else 0')
  const connections = new Gauge({
    name: 'plant_store_database_connections',
    help: 'PostgreSQL connections held by plant-store processes on this database, by state (active = running a query), not counting the one answering the scrape; none for the embedded store',
    labelNames: ['state'] as const,
    registers,
  })

  return {
    registry,
    requestStarted: () => inFlight.inc(),
    // Counted where the append is known, not from the head position: retries, conflicts and racing
    // creates consume positions without appending.
    eventAppended: () => eventsAppended.inc(),
    recordRequest: ({ method, route, status, durationMs }: RequestRecord) => {
      const labels = { method, route, status: String(status) }
      inFlight.dec()
      requests.inc(labels)
      duration.observe(labels, durationMs / 1000)
    },
    recordStore: (state: StoreState | undefined) => {
      databaseUp.set(state ? 1 : 0)
      if (!state) return
      head.set(state.headPosition)
      projected.set(state.projectedPosition)
      lag.set(state.lagEvents)
      connections.reset()
      for (const [name, count] of Object.entries(state.connections)) connections.set({ state: name }, count)
    },
  }
}
