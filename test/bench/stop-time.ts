import { closeSync, constants, openSync, readSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase } from '../support/postgres.ts'
import { spawnServer } from '../support/server-process.ts'

// How long SIGTERM takes to end the service on PostgreSQL, by what its stdout does: read, a
// reader that has gone, a reader that stalls after the start (a pipe filled by 150 logged
// requests). `bun test/bench/stop-time.ts [runs]`; prints the median and the slowest of each.
const RUNS = Number(process.argv[2] ?? 5)
type Mode = 'read' | 'gone' | 'stalled'

const database = await createTestDatabase('stop-time')
const folder = await mkdtemp(join(tmpdir(), 'plant-store-stop-time-'))

async function stopOnce(mode: Mode, run: number): Promise<number> {
  const path = join(folder, `${mode}-${run}`)
  Bun.spawnSync(['mkfifo', path])
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  const writer = openSync(path, constants.O_WRONLY)
  const env = {
    HOME: '/tmp',
    DATABASE_URL: database.url,
    AUTH_JWT_SECRET: 'stop-time-secret-of-at-least-32-bytes-long',
    LOG_FORMAT: 'json',
  }
  const child = spawnServer(env, { stdout: writer, stderr: 'ignore' })
  closeSync(writer)
  const buffer = Buffer.alloc(65_536)
  let text = ''
  const drain = () => {
    try {
      const read = readSync(reader, buffer)
      text += buffer.subarray(0, read).toString()
      return read
    } catch {
      return 0
    }
  }
  while (!text.includes('plant store listening')) if (drain() === 0) await Bun.sleep(10)
  const port = (
    JSON.parse(text.split('\n').find((line) => line.includes('listening')) ?? '') as { port: number }
  ).port
  if (mode === 'gone') closeSync(reader)
  const reading = mode === 'read' ? setInterval(drain, 5) : undefined
  for (let batch = 0; batch < 15; batch++)
    await Promise.all(
      Array.from({ length: 10 }, () => fetch(`http://127.0.0.1:${port}/x${'y'.repeat(1000)}`)),
    )
  const startedAt = performance.now()
  child.kill('SIGTERM')
  await child.exited
  const ms = performance.now() - startedAt
  clearInterval(reading)
  if (mode !== 'gone') closeSync(reader)
  return ms
}

for (const mode of ['read', 'gone', 'stalled'] as const) {
  const times: number[] = []
  for (let run = 0; run < RUNS; run++) times.push(await stopOnce(mode, run))
  times.sort((a, b) => a - b)
  const median = times[Math.floor(times.length / 2)] ?? 0
  console.log(
    `${mode}: median ${median.toFixed(0)} ms, slowest ${(times.at(-1) ?? 0).toFixed(0)} ms (${RUNS} stops)`,
  )
}
await database.drop()
await rm(folder, { recursive: true, force: true })
