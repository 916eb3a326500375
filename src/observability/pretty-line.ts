const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
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
  const head = [clock, LEVELS[Number(level)] ?? String(level), String(msg ?? ''), ...pairs].join(' ')
  const stack = (err as { stack?: unknown } | undefined)?.stack
  return `${head}${err ? `\n  ${typeof stack === 'string' ? stack : JSON.stringify(err)}` : ''}\n`
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value
  return JSON.stringify(value)
}
