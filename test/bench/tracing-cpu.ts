// CPU per create, in the server process and in its PostgreSQL backends (from /proc), with tracing
// off or on, for one checkout of the service: run it for two checkouts in turn (this one, and the
// commit before tracing) to see what tracing costs when it is off, and when it is on.
// Run: bun test/bench/tracing-cpu.ts <root> off|on [creates]   (needs the PostgreSQL of the tests)
// With `on`, spans go to an OTLP receiver inside this script: its CPU is not the server's.
import process from 'node:process'
import postgres from 'postgres'
import { startOtlpReceiver } from '../support/otlp-receiver.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { SERVER_COMMAND, startServer } from '../support/server-process.ts'
import { concurrentCreates } from './concurrent-creates.ts'
import { meterCpu } from './cpu.ts'

const root = process.argv[2] ?? new URL('../..', import.meta.url).pathname
const mode = process.argv[3] ?? 'off'
const CREATES = Number(process.argv[4] ?? 4000)
const CLIENTS = 16
const WARM_UP = 500
const SECRET = crypto.randomUUID() + crypto.randomUUID()

const receiver = startOtlpReceiver()
const database = await createTestDatabase('bench_tracing_cpu')
const sql = postgres(database.url, { max: 2, onnotice: () => {} })
const tracing: Record<string, string> = mode === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } : {}
const env = { DATABASE_URL: database.url, AUTH_JWT_SECRET: SECRET, ...tracing }
const server = await startServer(env, SERVER_COMMAND, { cwd: root })
void server.process.stderr.pipeTo(new WritableStream()).catch(() => {})
try {
  // Every create comes with a caller's traceparent, as from a traced client; off, it is ignored.
  const create = await concurrentCreates(SECRET, CLIENTS, async (token, id) => {
    const trace = crypto.randomUUID().replaceAll('-', '')
    const response = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: {
        ...tokenHeader(token),
        'content-type': 'application/json',
        traceparent: `00-${trace}-${trace.slice(0, 16)}-01`,
      },
      body: JSON.stringify({ id, name: `plant ${id}` }),
    })
    if (response.status !== 200) throw new Error(`a create answered ${response.status}`)
  })
  await create(WARM_UP)
  const meter = await meterCpu(sql, database.name, server.process.pid)
  const started = performance.now()
  await create(CREATES)
  const seconds = (performance.now() - started) / 1000
  const { processMs, databaseMs } = await meter.stop()
  console.log(
    `${root} tracing ${mode}: per create, server ${(processMs / CREATES).toFixed(3)} ms CPU, PostgreSQL ${(databaseMs / CREATES).toFixed(3)} ms CPU; ${Math.round(CREATES / seconds)} creates/s (${CREATES} creates, ${CLIENTS} clients, ${receiver.spans().length} spans received before the end)`,
  )
} finally {
  await server.stop('SIGKILL')
  await sql.end()
  await database.drop()
  await receiver.stop()
}
