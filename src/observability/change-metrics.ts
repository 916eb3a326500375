import { Gauge, type Registry } from 'prom-client'

// The change streams' gauge, in the app's registry, read at scrape time.
export function createChangeMetrics(registry: Registry, openStreams: () => number): void {
  new Gauge({
    name: 'plant_store_change_streams',
    help: 'Open GET /plants/changes streams on this process',
    registers: [registry],
    collect() {
      this.set(openStreams())
    },
  })
}
