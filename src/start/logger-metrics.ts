import { Counter, type Registry } from 'prom-client'

// Log lines the service dropped because stdout did not take them (a log collector that stalled or
// went away): the log never holds up a request, so lines are what gives.
export function countDroppedLogLines(registry: Registry, dropped: () => number): void {
  let counted = 0
  new Counter({
    name: 'plant_store_log_lines_dropped_total',
    help: 'Log lines dropped because stdout did not take them.',
    registers: [registry],
    collect() {
      const now = dropped()
      this.inc(now - counted)
      counted = now
    },
  })
}
