import process from 'node:process'
import pino from 'pino'

export type Logger = Pick<pino.Logger, 'info' | 'warn' | 'error' | 'debug' | 'fatal' | 'child'>

export type LoggerOptions = {
  // Human-readable lines instead of JSON (main turns this on when stdout is a terminal).
  pretty?: boolean
  // Where lines go; stdout by default. Tests pass their own.
  write?: (line: string) => void
}

export function createLogger(level: string, { pretty = false, write }: LoggerOptions = {}): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    // Errors keep their cause chain (Drizzle puts the driver's error there) as nested objects.
    serializers: { err: pino.stdSerializers.errWithCause },
  }
  if (!pretty && !write) return pino(options)
  const out = write ?? ((line: string) => void process.stdout.write(line))
  return pino(options, { write: (line: string) => out(pretty ? prettyLine(line) : line) })
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' })
}

// One pino JSON line as `12:00:00.123 INFO  message key=value …` for a person at a terminal.
export function prettyLine(jsonLine: string): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>
  } catch {
    return jsonLine
  }
  const { level, time, msg, err, ...fields } = entry
  const clock = typeof time === 'string' ? time.slice(11, 23) : ''
  const pairs = Object.entries(fields).map(([key, value]) => `${key}=${formatValue(value)}`)
  const label = pino.levels.labels[Number(level)]?.toUpperCase().padEnd(5) ?? String(level)
  const head = [clock, label, String(msg ?? ''), ...pairs].join(' ')
  const stack = (err as { stack?: unknown } | undefined)?.stack
  return `${head}${err ? `\n  ${typeof stack === 'string' ? stack : JSON.stringify(err)}` : ''}\n`
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value
  return JSON.stringify(value)
}
