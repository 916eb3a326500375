import { INTENDED_STATUS, type Kind } from './request-mix.ts'
import { RSS_WINDOW_MS, type SoakReport } from './soak-run.ts'

// Why the soak failed, or nothing when it passed.
export function soakFailures(report: SoakReport, maxGrowth = 0.2): string[] {
  const failures: string[] = []
  if (!(report.rss.ratio <= 1 + maxGrowth)) {
    failures.push(`RSS grew ${((report.rss.ratio - 1) * 100).toFixed(1)}% (limit ${maxGrowth * 100}%)`)
  }
  if (report.unintended.count > 0) failures.push(`${report.unintended.count} unintended answers`)
  const ticks = report.options.rate * (report.options.seconds + report.options.warmupSeconds)
  if (report.skipped > ticks * 0.01) failures.push(`${report.skipped} ticks skipped: the load fell behind`)
  const { events, plants, mismatches, acknowledgedCreates } = report.store
  if (mismatches !== 0 || events !== plants) failures.push(`the projection differs from the log`)
  if (events !== acknowledgedCreates) failures.push(`${events} events for ${acknowledgedCreates} creates`)
  if (report.exitCode !== 0) failures.push(`the server exited ${report.exitCode} on SIGTERM`)
  return failures
}

export function formatSoakReport(report: SoakReport): string {
  const { options: o, rss, latency, store } = report
  const lines = [
    `soak: ${o.seconds} s at ${o.rate} requests/s after ${o.warmupSeconds} s of warm-up, ${o.owners} owners`,
    `requests measured: ${report.sent} (skipped ticks: ${report.skipped})`,
    'kind         intended  statuses                p50 ms   p99 ms',
    ...Object.entries(report.byKind).map(([kind, f]) =>
      [
        kind.padEnd(12),
        String(INTENDED_STATUS[kind as Kind]).padEnd(9),
        Object.entries(f.statuses)
          .map(([status, n]) => `${status}×${n}`)
          .join(' ')
          .padEnd(22),
        f.p50Ms.toFixed(1).padStart(7),
        f.p99Ms.toFixed(1).padStart(8),
      ].join(' '),
    ),
    `latency (all kinds): p50 ${latency.p50Ms.toFixed(1)} ms, p99 ${latency.p99Ms.toFixed(1)} ms`,
    `unintended answers: ${report.unintended.count}`,
    ...report.unintended.examples.map((u) => `  ${u.kind} → ${u.status}: ${u.detail ?? ''}`),
    `RSS after warm-up ${rss.afterWarmupMb.toFixed(1)} MB, at end ${rss.endMb.toFixed(1)} MB, ratio ${rss.ratio.toFixed(3)} (peak ${rss.peakMb.toFixed(1)} MB, ${rss.samples} samples; medians over ${RSS_WINDOW_MS / 1000} s)`,
    `RSS every ${RSS_WINDOW_MS / 1000} s (MB): ${rss.trajectoryMb.join(' ')}`,
    `store: ${store.events} events, ${store.plants} plants, ${store.mismatches} mismatches, ${store.acknowledgedCreates} acknowledged creates`,
    `server exit code on SIGTERM: ${report.exitCode}`,
  ]
  return lines.join('\n')
}
