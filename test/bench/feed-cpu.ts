// CPU per create with the feed on, in the server process and in its PostgreSQL backends (from
// /proc), so that the feed's own work per event is seen apart from a noisy machine's throughput.
// Run: bun test/bench/feed-cpu.ts [creates]   (needs the PostgreSQL and NATS of the tests)
import process from 'node:process'
import postgres from 'postgres'
import { createTestFeed } from '../support/nats.ts'
import { postPlant } from '../support/plant-client.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { startServer } from '../support/server-process.ts'
import { concurrentCreates } from './concurrent-creates.ts'
import { meterCpu } from './cpu.ts'

const CREATES = Number(process.argv[2] ?? 4000)
const CLIENTS = 16
const WARM_UP = 500
const SECRET = crypto.randomUUID() + crypto.randomUUID()

const database = await createTestDatabase('bench_feed_cpu')
const feed = await createTestFeed('bench_feed_cpu')
const sql = postgres(database.url, { max: 2, onnotice: () => {} })
const server = await startServer({ DATABASE_URL: database.url, AUTH_JWT_SECRET: SECRET, ...feed.env })
try {
  const create = await concurrentCreates(SECRET, CLIENTS, async (token, id) => {
    await postPlant(server.url, token, { id, name: `plant ${id}` })
  })
  await create(WARM_UP)
  await feed.waitFor(WARM_UP, 60_000)
  const meter = await meterCpu(sql, database.name, server.process.pid)
  await create(CREATES)
  await feed.waitFor(WARM_UP + CREATES, 60_000)
  const { processMs, databaseMs } = await meter.stop()
  console.log(
    `per create, published: server ${(processMs / CREATES).toFixed(3)} ms CPU, PostgreSQL ${(databaseMs / CREATES).toFixed(3)} ms CPU (${CREATES} creates, ${CLIENTS} clients)`,
  )
} finally {
  await server.stop('SIGKILL')
  await sql.end()
  await feed.drop()
  await database.drop()
}
