// What the request log line costs the service per request, in process: logRequest into the
// service's logger (pino, JSON, the chunked writer replaced by one that drops the text), microseconds
// a line, the median of rounds. Run: bun test/bench/request-log.ts [--root <checkout>] [--lines N]
import { parseArgs } from 'node:util'
import { percentile } from '../support/percentiles.ts'

const { values: flags } = parseArgs({
  options: {
    root: { type: 'string', default: new URL('../..', import.meta.url).pathname },
    lines: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '7' },
  },
})
const { logRequest } = (await import(
  `${flags.root}/src/observability/request-log.ts`
)) as typeof import('../../src/observability/request-log.ts')
const { createLogger } = (await import(
  `${flags.root}/src/shared/logger.ts`
)) as typeof import('../../src/shared/logger.ts')
let written = 0
const logger = createLogger('info', {
  write: (line) => {
    written += line.length
  },
})
const lines = Number(flags.lines)
const record = (i: number) => ({
  requestId: `0192b7a4-6c1e-7d3f-9a4b-${String(i).padStart(12, '0')}`,
  method: 'POST',
  route: '/plants',
  path: '/plants',
  status: 200,
  durationMs: 1.23456 + (i % 7),
  subject: `writer-${i % 1000}`,
})
const perLineUs: number[] = []
for (let round = 0; round < Number(flags.rounds); round++) {
  const started = process.cpuUsage()
  for (let i = 0; i < lines; i++) logRequest(logger, record(i))
  const used = process.cpuUsage(started)
  perLineUs.push((used.user + used.system) / lines)
}
perLineUs.sort((a, b) => a - b)
console.log(
  `${flags.root}: ${percentile(perLineUs, 0.5).toFixed(3)} µs of CPU a request line (median of ${flags.rounds} rounds of ${lines}; ${written} bytes)`,
)
