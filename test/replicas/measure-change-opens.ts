import postgres from 'postgres'
import { startPrimaryWithReplica } from '../support/postgres-replica.ts'
import { changesRequest, openSse } from '../support/sse-client.ts'
import { create, startReplicaServer, tokenFor } from './replica-client.ts'

// How many transactions the primary runs for N change streams opened from the beginning, with and
// without a replica to read from: bun test/replicas/measure-change-opens.ts [streams] [plants]
const STREAMS = Number(process.argv[2] ?? 500)
const PLANTS = Number(process.argv[3] ?? 20)

const pair = await startPrimaryWithReplica()
const sql = postgres(pair.primaryUrl, { max: 1, onnotice: () => {} })
// Backends report their counts once idle for a second: settle before reading them.
const commits = async () => {
  await Bun.sleep(2500)
  await sql`select pg_stat_clear_snapshot()`
  const [row] =
    await sql`select xact_commit::text as n from pg_stat_database where datname = current_database()`
  return Number(row?.n)
}
try {
  for (const replicas of [false, true]) {
    const server = await startReplicaServer({
      DATABASE_URL: pair.primaryUrl,
      ...(replicas ? { DATABASE_READ_URLS: pair.replicaUrl } : {}),
    })
    try {
      const token = await tokenFor(`measure-${replicas}`)
      for (let id = 1; id <= PLANTS; id++) await create(server.url, token, id)
      await pair.caughtUp()
      // What the server does by itself meanwhile (follower polls, replica checks), measured alike.
      let started = performance.now()
      const idleFrom = await commits()
      const idlePerMs = ((await commits()) - idleFrom) / (performance.now() - started)
      started = performance.now()
      const from = await commits()
      for (let opened = 0; opened < STREAMS; opened += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, STREAMS - opened) }, async () => {
            const reader = await openSse(changesRequest(server.url, token, { after: '0' }))
            const events = await reader.take(PLANTS)
            if (events.length !== PLANTS) throw new Error(`a stream got ${events.length} events`)
            await reader.close()
          }),
        )
      }
      const total = (await commits()) - from
      const ms = performance.now() - started
      const own = total - idlePerMs * ms
      console.log(
        `${replicas ? 'with a replica' : 'primary only  '}: ${STREAMS} streams opened; primary transactions over ${ms.toFixed(0)} ms ${total} (${(own / STREAMS).toFixed(2)} per stream beyond the idle rate)`,
      )
    } finally {
      await server.stop()
    }
  }
} finally {
  await sql.end()
  pair.stop()
}
