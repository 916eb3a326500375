// bun test/bench/soak.ts [--seconds 60] [--rate 100] [--warmup 60]
// Exits 1 when RSS at the end is more than 20% above its value after warm-up, or when any
// request got an answer other than the one its kind is meant to get.
import { parseArgs } from 'node:util'
import { formatSoakReport, soakFailures } from '../support/soak-report.ts'
import { runSoak } from '../support/soak-run.ts'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    rate: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '60' },
  },
})
const number = (name: string, text: string) => {
  const value = Number(text)
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`--${name} must be a positive integer, got "${text}"`)
    process.exit(2)
  }
  return value
}

const report = await runSoak({
  seconds: number('seconds', values.seconds),
  rate: number('rate', values.rate),
  warmupSeconds: number('warmup', values.warmup),
  log: (line) => console.error(line),
})
console.log(formatSoakReport(report))
const failures = soakFailures(report)
console.log(failures.length === 0 ? 'soak passed' : `soak FAILED: ${failures.join('; ')}`)
process.exit(failures.length === 0 ? 0 : 1)
