import process from 'node:process'
import pino from 'pino'
import { type LoggedError, loggedError } from './logged-error.ts'

export type Logger = Pick<pino.Logger, 'info' | 'warn' | 'error' | 'debug' | 'fatal' | 'child'>

export type LoggerOptions = {
  // Human-readable lines instead of JSON (main turns this on when stdout is a terminal).
  pretty?: boolean
  // Where lines go: the service's is stdoutLog() (logger-output.ts); tests pass their own.
  write?: (line: string) => void
}

export function createLogger(
  level: string,
  { pretty = false, write = (line) => void process.stdout.write(line) }: LoggerOptions = {},
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    // Errors keep their cause chain (Drizzle puts the driver's error there) as nested objects,
    // each only its kind, code and stack: what an error carries may be people (logged-error.ts).
    serializers: { err: loggedError },
  }
  return pino(options, { write: (line: string) => write(pretty ? prettyLine(line) : line) })
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
  return `${head}${err ? `\n  ${describeError(err as LoggedError)}` : ''}\n`
}

// An error as loggedError wrote it: `Type code: message`, its frames, then its cause the same way.
function describeError({ type, code, message, stack, cause }: LoggedError): string {
  const head = `${[type, code].filter(Boolean).join(' ')}${message ? `: ${message}` : ''}`
  const text = [head, stack].filter(Boolean).join('\n')
  return cause ? `${text}\n  caused by ${describeError(cause)}` : text
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value
  return JSON.stringify(value)
}
