import { expect, test } from 'bun:test'
import { formatSoakReport, soakFailures } from '../support/soak-report.ts'
import { runSoak } from '../support/soak-run.ts'

// The soak of `bun test/bench/soak.ts`, shortened for CI: 15 s of warm-up (past the first-seconds
// step in RSS from JIT tiers and the connection pool filling) and 15 s measured, 100 requests/s.
const SHORT_SOAK = { warmupSeconds: 15, seconds: 15, rate: 100 }

test('a short soak of mixed load: only intended answers, and RSS within 20% of its post-warm-up value', async () => {
  // given the real server on a fresh PostgreSQL database, warmed up with the mixed load
  // when the same load runs at a steady rate
  const report = await runSoak(SHORT_SOAK)
  console.log(formatSoakReport(report))
  // then no request got an answer other than the one its kind is meant to get, the memory did
  // not grow past the bound, the store is consistent and the server drained on SIGTERM
  expect(soakFailures(report)).toEqual([])
}, 120_000)
