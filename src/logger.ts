import process from 'node:process'
import pino from 'pino'
import { prettyLine } from './observability/pretty-line.ts'

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
