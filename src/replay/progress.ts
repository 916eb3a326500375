export type ProgressSample = { events: number; total: number; elapsedSeconds: number }

const BAR_WIDTH = 30

// One line of progress: a bar for a terminal (redrawn in place), plain text for logs.
export function formatProgress({ events, total, elapsedSeconds }: ProgressSample, tty: boolean): string {
  const rate = elapsedSeconds > 0 ? events / elapsedSeconds : 0
  const fraction = total > 0 ? Math.min(1, events / total) : 1
  const eta = rate > 0 ? Math.max(0, (total - events) / rate) : undefined
  const figures = `${events}/${total} events, ${Math.round(rate)} events/s, ETA ${formatSeconds(eta)}`
  if (!tty) return `rebuild: ${figures}\n`
  const filled = Math.round(fraction * BAR_WIDTH)
  const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`
  return `\r[${bar}] ${String(Math.floor(fraction * 100)).padStart(3)}% ${figures}\u001b[K`
}

export function formatSeconds(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '?'
  if (seconds < 60) return `${Math.ceil(seconds)}s`
  return `${Math.floor(seconds / 60)}m${String(Math.ceil(seconds % 60)).padStart(2, '0')}s`
}

export type ProgressOutput = { write: (text: string) => void; tty: boolean; clock: () => number }

// Reports at most every `intervalMs` (a terminal redraws more often than a log wants lines).
export function progressReporter({ write, tty, clock }: ProgressOutput, intervalMs = tty ? 200 : 2000) {
  const started = clock()
  let lastReport = Number.NEGATIVE_INFINITY
  return {
    report({ events, total }: { events: number; total: number }) {
      const now = clock()
      if (now - lastReport < intervalMs) return
      lastReport = now
      write(formatProgress({ events, total, elapsedSeconds: (now - started) / 1000 }, tty))
    },
    finish() {
      if (tty) write('\n')
    },
  }
}
