import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { closeSync, constants, openSync, readSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { denoServerCommand } from '../support/deno.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { stopOnExit } from '../support/server-cleanup.ts'
import { SERVER_COMMAND, spawnServer } from '../support/server-process.ts'

// A log collector that stalls or goes away leaves the service's stdout a full or broken pipe. A stop
// ends within its deadline whatever stdout does, and no request waits on the log.
const REQUEST_TIMEOUT_MS = 2_000
// The drain (REQUEST_TIMEOUT_MS), closing the pools, and the log's last flush; generous for a
// shared machine, and far below a hang.
const STOP_BOUND_MS = REQUEST_TIMEOUT_MS + 8_000
const START_BOUND_MS = 60_000
// The hang depended on timing (about one stop in two): each case stops this many servers.
const TRIES = 4
// Lines of about 1 KB each: 100 of them fill a pipe of 64 KiB.
const LONG_PATH = `/no-such-path-${'x'.repeat(1000)}`

let database: TestDatabase
let folder: string
beforeAll(async () => {
  database = await createTestDatabase('stalled-stdout')
  folder = await mkdtemp(join(tmpdir(), 'plant-store-stdout-'))
})
afterAll(async () => {
  await database?.drop()
  await rm(folder, { recursive: true, force: true })
})

// A pipe whose reading end this test holds: a FIFO, so that either end can be closed at will.
// `nonBlocking` sets O_NONBLOCK on the writing end, which the server then shares.
function makePipe(name: string, nonBlocking: boolean) {
  const path = join(folder, name)
  if (Bun.spawnSync(['mkfifo', path]).exitCode !== 0) throw new Error('mkfifo failed')
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  const writer = openSync(path, constants.O_WRONLY | (nonBlocking ? constants.O_NONBLOCK : 0))
  return { reader, writer }
}

async function startWritingTo(stdout: number, reader: number, command = SERVER_COMMAND) {
  const env = {
    DATABASE_URL: database.url,
    AUTH_JWT_SECRET: 'stalled-stdout-secret-of-at-least-32-bytes',
    REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    LOG_FORMAT: 'json',
  }
  const child = spawnServer(env, { command, stdout, stderr: 'ignore' })
  closeSync(stdout)
  // Killed with the test process even if the test never gets to it.
  const forget = stopOnExit(() => child.kill('SIGKILL'), `kill -9 ${child.pid}`)
  void child.exited.then(forget)
  try {
    const port = await listeningPort(reader)
    return { child, url: `http://127.0.0.1:${port}` }
  } catch (error) {
    child.kill('SIGKILL')
    throw error
  }
}

// Reads the pipe until the server says it listens (a first start on a loaded machine, migrations
// included, has taken over 20 s).
async function listeningPort(reader: number): Promise<number> {
  const buffer = Buffer.alloc(65_536)
  let text = ''
  const deadline = Date.now() + START_BOUND_MS
  while (Date.now() < deadline) {
    let read = 0
    try {
      read = readSync(reader, buffer)
    } catch (error) {
      if ((error as { code?: string }).code !== 'EAGAIN') throw error
    }
    text += buffer.subarray(0, read).toString()
    const line = text.split('\n').find((candidate) => candidate.includes('plant store listening'))
    if (line) return (JSON.parse(line) as { port: number }).port
    if (read === 0) await Bun.sleep(20)
  }
  throw new Error(`the server did not start: ${text}`)
}

// Requests whose log lines, together, are larger than a pipe holds; each must be answered.
async function requestsFillingThePipe(url: string): Promise<number[]> {
  const statuses: number[] = []
  for (let batch = 0; batch < 15; batch++) {
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        fetch(`${url}${LONG_PATH}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS * 2) }),
      ),
    )
    statuses.push(...answers.map((answer) => answer.status))
  }
  return statuses
}

async function stopWithin(child: ReturnType<typeof Bun.spawn>, ms: number) {
  const startedAt = performance.now()
  child.kill('SIGTERM')
  const code = await Promise.race([child.exited, Bun.sleep(ms).then(() => 'still running' as const)])
  if (code === 'still running') child.kill('SIGKILL')
  await child.exited
  return { code, ms: performance.now() - startedAt }
}

describe.each([
  ['Bun', 'blocking', false, SERVER_COMMAND],
  ['Bun', 'non-blocking', true, SERVER_COMMAND],
  ['Deno', 'blocking', false, denoServerCommand()],
])('on %s, with stdout a %s pipe', (runtime, _kind, nonBlocking, command) => {
  test(
    'whose reader has gone, SIGTERM ends the service with exit 0 within the stop deadline',
    async () => {
      const stops = []
      for (let attempt = 0; attempt < TRIES; attempt++) {
        // given a running server whose stdout's reader has closed its end
        const pipe = makePipe(`gone-${runtime}-${nonBlocking}-${attempt}`, nonBlocking)
        const { child, url } = await startWritingTo(pipe.writer, pipe.reader, command)
        closeSync(pipe.reader)
        try {
          // and a request logged since
          expect((await fetch(`${url}/health`)).status).toBe(200)
          // when it is asked to stop
          stops.push(await stopWithin(child, STOP_BOUND_MS))
        } finally {
          child.kill('SIGKILL')
        }
      }
      // then every stop ended, cleanly, in time
      expect(stops.map(({ code }) => code)).toEqual(Array(TRIES).fill(0))
    },
    START_BOUND_MS + TRIES * (STOP_BOUND_MS + 15_000),
  )

  test(
    'whose reader stalls, requests are still answered and SIGTERM ends the service within the stop deadline',
    async () => {
      // given a running server whose stdout nobody reads any more
      const pipe = makePipe(`stalled-${runtime}-${nonBlocking}`, nonBlocking)
      const { child, url } = await startWritingTo(pipe.writer, pipe.reader, command)
      try {
        // when it logs more than the pipe holds, then it is asked to stop
        const statuses = await requestsFillingThePipe(url)
        const stop = await stopWithin(child, STOP_BOUND_MS)
        // then every request was answered, and the stop ended in time
        expect(statuses).toEqual(Array(150).fill(404))
        expect(stop.code).toBe(0)
      } finally {
        child.kill('SIGKILL')
        closeSync(pipe.reader)
      }
    },
    START_BOUND_MS + STOP_BOUND_MS + 30_000,
  )
})

test(
  'lines a gone reader cannot take are counted in plant_store_log_lines_dropped_total',
  async () => {
    // given a running server whose stdout's reader has closed its end
    const pipe = makePipe('gone-counted', true)
    const { child, url } = await startWritingTo(pipe.writer, pipe.reader)
    closeSync(pipe.reader)
    try {
      // when it logs requests, past the first write that finds the reader gone
      let dropped = 0
      for (let round = 0; round < 20 && dropped === 0; round++) {
        await requestsFillingThePipe(url)
        const metrics = await (await fetch(`${url}/metrics`)).text()
        dropped = Number(/^plant_store_log_lines_dropped_total (\d+)$/m.exec(metrics)?.[1] ?? 0)
      }
      // then the lines it dropped are counted
      expect(dropped).toBeGreaterThan(0)
    } finally {
      child.kill('SIGKILL')
    }
  },
  START_BOUND_MS + 60_000,
)
