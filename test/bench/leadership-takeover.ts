// How long the feed's leadership takes to move behind PgBouncer when the leader's server connection
// is ended: per round, two leaderships of one stream, the leader's backend ended, the time until the
// other leads, then, the other stepping down, until the first leads again. `load`: two busy loops
// beside it, one per core, as a loaded machine. Prints each slow call and the slowest takeovers.
// Run: bun test/bench/leadership-takeover.ts [rounds] [load]   (needs the PostgreSQL of the tests)
import process from 'node:process'
import postgres from 'postgres'
import { advisoryLockLeadership } from '../../src/feed/leadership.ts'
import { startPgBouncer } from '../support/pgbouncer.ts'
import { createTestDatabase } from '../support/postgres.ts'

const ROUNDS = Number(process.argv[2] ?? 20)
const burners = process.argv[3] === 'load' ? [0, 1].map(() => Bun.spawn(['bun', '-e', 'for (;;) {}'])) : []
const bouncer = await startPgBouncer()
const database = await createTestDatabase('bench_takeover')
const admin = postgres(database.url, { max: 1, onnotice: () => {} })
const url = `${bouncer.through(database.url)}?prepare=false`
const until = async (leads: () => Promise<boolean>) => {
  const started = performance.now()
  for (;;) {
    const asked = performance.now()
    const answer = await leads()
    if (performance.now() - asked > 500)
      console.log(`  a question took ${Math.round(performance.now() - asked)} ms`)
    if (answer) return Math.round(performance.now() - started)
    await Bun.sleep(100)
  }
}
const takeovers: number[] = []
const returns: number[] = []
try {
  for (let round = 0; round < ROUNDS; round++) {
    const [first, second] = [0, 1].map(() => advisoryLockLeadership(url, `feed-${round}`))
    if (!first || !second) throw new Error('no leadership')
    await first.isLeader()
    await second.isLeader()
    await admin`select pg_terminate_backend(pid) from pg_locks where locktype = 'advisory'
      and classid = ${0x706c616e}::oid and granted`
    takeovers.push(await until(second.isLeader))
    await first.isLeader()
    await second.release()
    returns.push(await until(first.isLeader))
    await first.close()
    await second.close()
  }
  const slowest = (times: number[]) => Math.max(...times)
  console.log(`rounds: ${ROUNDS}${burners.length ? ', two busy loops beside' : ''}`)
  console.log(`takeover after the leader's backend ended: slowest ${slowest(takeovers)} ms`)
  console.log(`leading again after the other stepped down: slowest ${slowest(returns)} ms`)
} finally {
  for (const burner of burners) burner.kill()
  await admin.end()
  await bouncer.stop()
  await database.drop()
}
