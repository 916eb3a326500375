import { Counter, Gauge, type Registry } from 'prom-client'

export type FeedGauges = {
  connected: () => boolean
  // Events in the log not yet in the stream, leaving out those never published (an erased
  // owner's); undefined when that cannot be told now.
  lag: () => Promise<number | undefined>
}

// The event feed's metrics, in the app's registry; the gauges are read at scrape time.
export function createFeedMetrics(
  registry: Registry,
  gauges: FeedGauges,
): { published: (count: number) => void } {
  const registers = [registry]
  const published = new Counter({
    name: 'plant_store_feed_published_total',
    help: 'Events this process published to the NATS JetStream stream',
    registers,
  })
  new Gauge({
    name: 'plant_store_feed_lag_events',
    help: "Events in the log not yet in the stream, an erased owner's left out as never published (the last value known while NATS is unreachable)",
    registers,
    async collect() {
      const lag = await gauges.lag().catch(() => undefined)
      if (lag !== undefined) this.set(lag)
    },
  })
  new Gauge({
    name: 'plant_store_feed_connected',
    help: '1 while this process is connected to NATS, else 0',
    registers,
    collect() {
      this.set(gauges.connected() ? 1 : 0)
    },
  })
  return { published: (count: number) => published.inc(count) }
}
