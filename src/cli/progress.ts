import process from 'node:process'

// Progress of the CLI's long work (an import, an export, a rebuild, a verification, a rotation),
// on stderr: a bar redrawn in place on a terminal, a plain line now and then for logs.

// `done` of `total` (when known), or of an input whose `fraction` has been read (a file's bytes).
export type ProgressSample = { done: number; total?: number; fraction?: number; elapsedSeconds: number }

// What the lines say: `label` starts them (`import`, `keys rotate`), `unit` counts (`events`).
export type ProgressLabel = { label: string; unit?: string }

const BAR_WIDTH = 30

// One line of progress: a bar for a terminal (redrawn in place), plain text for logs.
export function formatProgress(
  { done, total, fraction: given, elapsedSeconds }: ProgressSample,
  tty: boolean,
  { label, unit = 'events' }: ProgressLabel,
): string {
  const rate = elapsedSeconds > 0 ? done / elapsedSeconds : 0
  const fraction =
    total !== undefined
      ? total > 0
        ? Math.min(1, done / total)
        : 1
      : given === undefined
        ? undefined
        : clamp(given)
  const eta =
    total !== undefined
      ? rate > 0
        ? Math.max(0, (total - done) / rate)
        : undefined
      : fraction !== undefined && fraction > 0 && elapsedSeconds > 0
        ? (elapsedSeconds * (1 - fraction)) / fraction
        : undefined
  const count =
    total !== undefined
      ? `${done}/${total} ${unit}`
      : fraction !== undefined
        ? `${done} ${unit} (${percent(fraction)}% of the input)`
        : `${done} ${unit}`
  const estimate = fraction === undefined ? '' : `, ETA ${formatSeconds(eta)}`
  const figures = `${count}, ${Math.round(rate)} ${unit}/s${estimate}`
  if (!tty) return `${label}: ${figures}\n`
  if (fraction === undefined) return `\r${label}: ${figures}\u001b[K`
  const filled = Math.round(fraction * BAR_WIDTH)
  const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`
  return `\r${label} [${bar}] ${String(percent(fraction)).padStart(3)}% ${figures}\u001b[K`
}

const clamp = (fraction: number) => Math.max(0, Math.min(1, fraction))
const percent = (fraction: number) => Math.floor(fraction * 100)

export function formatSeconds(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '?'
  const whole = Math.ceil(seconds)
  if (whole < 60) return `${whole}s`
  const [hours, minutes, rest] = [Math.floor(whole / 3600), Math.floor(whole / 60) % 60, whole % 60]
  const ms = `${minutes}m${String(rest).padStart(2, '0')}s`
  return hours === 0 ? ms : `${hours}h${ms.padStart(6, '0')}`
}

export type ProgressOutput = { write: (text: string) => void; tty: boolean; clock: () => number }

export type ProgressReporter = {
  report: (progress: { done: number; total?: number; fraction?: number }) => void
  // A step without figures (`checking the lines against each other`), on a line of its own once
  // the command has been reporting: a short command says nothing.
  step: (text: string) => void
  // Ends the bar's line on a terminal.
  finish: () => void
}

// Reports at most every `intervalMs` (a terminal redraws more often than a log wants lines), and
// nothing before the first interval has passed: work that ends sooner writes no progress at all.
export function progressReporter(
  { write, tty, clock }: ProgressOutput,
  label: ProgressLabel,
  intervalMs = tty ? 200 : 2000,
): ProgressReporter {
  const started = clock()
  let lastReport = started
  let drawn = false
  let spoken = false
  const endBar = () => {
    if (drawn) write('\n')
    drawn = false
  }
  return {
    report(progress) {
      const now = clock()
      if (now - lastReport < intervalMs) return
      lastReport = now
      spoken = true
      drawn = tty
      write(formatProgress({ ...progress, elapsedSeconds: (now - started) / 1000 }, tty, label))
    },
    step(text) {
      if (!spoken && clock() - started < intervalMs) return
      endBar()
      spoken = true
      write(`${label.label}: ${text}\n`)
    },
    finish: endBar,
  }
}

// The reporter of a command of the CLI: on stderr, a bar when stderr is a terminal.
export function stderrProgress(label: ProgressLabel): ProgressReporter {
  return progressReporter(
    {
      write: (text) => process.stderr.write(text),
      tty: process.stderr.isTTY === true,
      clock: () => performance.now(),
    },
    label,
  )
}
