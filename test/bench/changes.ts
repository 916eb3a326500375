import { connect, type Socket } from 'node:net'
import type postgres from 'postgres'
import { percentile } from '../support/percentiles.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { residentMb } from '../support/resident-memory.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { meterCpu } from './cpu.ts'
import { createRuns } from './load.ts'
import { type Bench, startService } from './services.ts'
import { writeFixture } from './tokens.ts'

export type ChangesOptions = {
  streams: number
  owners: number
  // Creates per second for the stream owners while a level is measured.
  rate: number
  seconds: number
  connections: number
}

export type ChangesLevel = {
  streams: number
  rssMb: number
  // CPU of the service process over the level's steady creates, as a share of one core.
  cpuPercent: number
  // From sending a create to the event's arrival on a stream of its owner, over every delivery.
  deliveries: number
  p50Ms: number
  p99Ms: number
}

export type ChangesResult = {
  levels: ChangesLevel[]
  // Without streams: the mean of a run before the streams open and one after they closed.
  postsPerSecond: { withoutStreams: number; withIdleStreams: number; ratio: number }
}

// GET /plants/changes at scale (docs/live-changes.md): one instance holding 0, 1,000 and `streams` open
// streams over `owners` owners while creates run at a steady rate, and POST throughput with those
// streams idle against none. The streams are raw sockets of this process, read as they arrive.
export async function measureChanges(
  bench: Bench,
  databaseUrl: string,
  sql: postgres.Sql,
  options: ChangesOptions,
): Promise<ChangesResult> {
  const followers = await writeFixture(bench.secret, 'follower', options.owners)
  const writers = await writeFixture(bench.secret, 'changes-writer', 1000)
  const service = await startService(bench, databaseUrl)
  const sent = new Map<string, number>()
  const latencies: number[] = []
  const sockets: Socket[] = []
  const database = new URL(databaseUrl).pathname.slice(1)
  const wrk = createRuns(service, writers.tokensFile, options.connections)
  // The followers' own plants: ids of their own (a plant's id is its owner's).
  let nextId = 0
  try {
    await wrk(3)
    const without = await wrk(options.seconds)
    console.log(`  POST without streams: ${without.requestsPerSecond.toFixed(0)}/s`)
    const levels: ChangesLevel[] = []
    for (const target of [0, Math.min(1000, options.streams), options.streams]) {
      while (sockets.length < target) {
        const batch = Math.min(500, target - sockets.length)
        const opened = await Promise.all(
          Array.from({ length: batch }, (_, index) => {
            const owner = (sockets.length + index) % options.owners
            return openStream(service, followers.tokens[owner] ?? '', (id) => {
              const at = sent.get(id)
              if (at !== undefined) latencies.push(performance.now() - at)
            })
          }),
        )
        sockets.push(...opened)
      }
      await Bun.sleep(1000)
      latencies.length = 0
      const meter = await meterCpu(sql, database, service.process.pid)
      const started = performance.now()
      await steadyCreates(service, followers.tokens, options.rate, options.seconds, sent, () => ++nextId)
      // Deliveries still on their way are waited for, not counted as lost.
      await Bun.sleep(1500)
      const cpu = await meter.stop()
      const sorted = [...latencies].sort((a, b) => a - b)
      const level = {
        streams: sockets.length,
        rssMb: await residentMb(service.process.pid),
        cpuPercent: (cpu.processMs / (performance.now() - started)) * 100,
        deliveries: sorted.length,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
      }
      levels.push(level)
      console.log(
        `  ${level.streams} streams: rss ${level.rssMb.toFixed(0)} MB, cpu ${level.cpuPercent.toFixed(1)}%, ` +
          `${level.deliveries} deliveries, p50 ${level.p50Ms.toFixed(1)} ms, p99 ${level.p99Ms.toFixed(1)} ms`,
      )
    }
    const withIdle = await wrk(options.seconds)
    console.log(`  POST with ${sockets.length} idle streams: ${withIdle.requestsPerSecond.toFixed(0)}/s`)
    // Without streams again, after them: the store has grown meanwhile and the machine's other
    // load has moved, so the comparison is with the mean of the runs before and after.
    for (const socket of sockets.splice(0)) socket.destroy()
    await Bun.sleep(2000)
    const after = await wrk(options.seconds)
    console.log(`  POST without streams, after: ${after.requestsPerSecond.toFixed(0)}/s`)
    const withoutStreams = (without.requestsPerSecond + after.requestsPerSecond) / 2
    return {
      levels,
      postsPerSecond: {
        withoutStreams,
        withIdleStreams: withIdle.requestsPerSecond,
        ratio: withIdle.requestsPerSecond / withoutStreams,
      },
    }
  } finally {
    for (const socket of sockets) socket.destroy()
    await service.stop()
  }
}

// A stream on a raw socket: `onPlant` gets the id of each plant that arrives.
function openStream(service: ServerProcess, token: string, onPlant: (id: string) => void): Promise<Socket> {
  const { hostname, port } = new URL(service.url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    let buffered = ''
    let connected = false
    socket.setEncoding('utf8')
    socket.on('error', reject)
    socket.on('data', (chunk: string) => {
      buffered += chunk
      if (!connected && buffered.includes(': connected')) {
        connected = true
        resolve(socket)
      }
      const end = buffered.lastIndexOf('\n\n')
      if (end < 0) return
      for (const match of buffered.slice(0, end).matchAll(/^data: \{"id":"(-?\d+)"/gm))
        onPlant(match[1] ?? '')
      buffered = buffered.slice(end + 2)
    })
    socket.write(`GET /plants/changes HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer ${token}\r\n\r\n`)
  })
}

// `rate` creates a second for `seconds`, each for a random owner, recording when each was sent.
async function steadyCreates(
  service: ServerProcess,
  tokens: string[],
  rate: number,
  seconds: number,
  sent: Map<string, number>,
  nextId: () => number,
) {
  const pending: Promise<unknown>[] = []
  const started = performance.now()
  for (let index = 0; index < rate * seconds; index++) {
    const due = started + (index * 1000) / rate
    const wait = due - performance.now()
    if (wait > 0) await Bun.sleep(wait)
    const id = String(nextId())
    const token = tokens[Math.floor(Math.random() * tokens.length)] ?? ''
    sent.set(id, performance.now())
    pending.push(
      fetch(`${service.url}/plants`, {
        method: 'POST',
        headers: { ...tokenHeader(token), 'content-type': 'application/json' },
        body: `{"id":${id},"name":"followed ${id}"}`,
      }).then((response) => response.arrayBuffer()),
    )
  }
  await Promise.all(pending)
}
