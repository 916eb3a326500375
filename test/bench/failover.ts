import postgres from 'postgres'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { startPrimaryWithReplica } from '../support/postgres-replica.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { createRuns, type Load, medianLoad } from './load.ts'
import { type Bench, startService } from './services.ts'
import { writeFixture } from './tokens.ts'

// What synchronous replication costs a create (docs/operating.md, Failover): POST /plants on a
// primary with a streaming standby, the primary confirming each commit with the standby
// (`synchronous_standby_names = '*'`) or not, alternating round by round in the same run, on the
// same servers and service. Both servers are on this machine with fsync off: the figure is the
// standby's round trip, without a disk flush on either side.
export type FailoverOptions = { rounds: number; seconds: number; connections: number }

export async function measureSynchronousCommit(bench: Bench, options: FailoverOptions) {
  const pair = await startPrimaryWithReplica()
  const sql = postgres(pair.primaryUrl, { max: 1, onnotice: () => {} })
  const synchronous = async (on: boolean) => {
    await sql.unsafe(`alter system set synchronous_standby_names = '${on ? '*' : ''}'`)
    await sql`select pg_reload_conf()`
    for (let tries = 0; tries < 200; tries++) {
      const [row] = await sql`select sync_state from pg_stat_replication`
      if ((row?.sync_state === 'sync') === on) return
      await Bun.sleep(25)
    }
    throw new Error(`the standby did not become ${on ? 'synchronous' : 'asynchronous'}`)
  }
  try {
    await migratePostgresDatabase(pair.primaryUrl, undefined, TEST_KEYS)
    const writers = await writeFixture(bench.secret, 'failover-writer', 1000)
    const service = await startService(bench, pair.primaryUrl)
    const creates = createRuns(service, writers.tokensFile, options.connections)
    try {
      await creates(2)
      const rounds: { asynchronous: Load; synchronous: Load }[] = []
      for (let round = 1; round <= options.rounds; round++) {
        await synchronous(false)
        const asynchronous = await creates(options.seconds)
        await synchronous(true)
        const measured = { asynchronous, synchronous: await creates(options.seconds) }
        rounds.push(measured)
        console.log(
          `  round ${round}: POST without a synchronous standby ${asynchronous.requestsPerSecond.toFixed(0)}/s ` +
            `(p50 ${asynchronous.p50Ms.toFixed(2)} ms), with one ${measured.synchronous.requestsPerSecond.toFixed(0)}/s ` +
            `(p50 ${measured.synchronous.p50Ms.toFixed(2)} ms)`,
        )
      }
      const figures = {
        asynchronous: medianLoad(rounds.map((round) => round.asynchronous)),
        synchronous: medianLoad(rounds.map((round) => round.synchronous)),
      }
      console.log(
        `  median: POST ${figures.asynchronous.requestsPerSecond.toFixed(0)}/s → ${figures.synchronous.requestsPerSecond.toFixed(0)}/s, ` +
          `p50 ${figures.asynchronous.p50Ms.toFixed(2)} → ${figures.synchronous.p50Ms.toFixed(2)} ms, ` +
          `p99 ${figures.asynchronous.p99Ms.toFixed(2)} → ${figures.synchronous.p99Ms.toFixed(2)} ms`,
      )
      return figures
    } finally {
      await service.stop()
    }
  } finally {
    await sql.end()
    pair.stop()
  }
}
