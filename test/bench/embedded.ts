import { rmSync } from 'node:fs'
import { makeDataDirSync } from '../support/data-dir.ts'
import { startCli } from '../support/server-process.ts'
import { processCpuMs } from './cpu.ts'
import { runsAgainst } from './load.ts'
import { type Bench, startEmbeddedService } from './services.ts'
import { summarise, withCpu } from './throughput.ts'
import { writeFixture } from './tokens.ts'

const READERS = 200
const PLANTS_PER_READER = 50

// POST and GET on the embedded default (its own PostgreSQL server), what a newcomer meets
// first. The readers' plants are brought in with the CLI's `events import` before the start.
export async function measureEmbedded(
  bench: Bench,
  options: { rounds: number; seconds: number; connections: number },
) {
  const dataDir = makeDataDirSync('plant-bench-embedded-')
  try {
    await importReaders(bench, dataDir)
    const fixtures = {
      create: await writeFixture(bench.secret, 'embedded-writer', 1000),
      page: await writeFixture(bench.secret, 'reader', READERS),
    }
    const service = await startEmbeddedService(bench, dataDir)
    const wrk = runsAgainst(service, fixtures, options.connections)
    const run = async (mode: 'create' | 'page', seconds: number) => {
      const before = processCpuMs(service.process.pid)
      const load = await wrk(mode, seconds)
      return withCpu(load, { processMs: processCpuMs(service.process.pid) - before, databaseMs: 0 })
    }
    try {
      for (const mode of ['create', 'page'] as const) await run(mode, Math.min(3, options.seconds))
      const rounds = []
      for (let round = 1; round <= options.rounds; round++) {
        const create = await run('create', options.seconds)
        const page = await run('page', options.seconds)
        rounds.push({ create, page })
        console.log(
          `  round ${round} embedded: create ${create.requestsPerSecond.toFixed(0)}/s, page ${page.requestsPerSecond.toFixed(0)}/s`,
        )
      }
      return summarise(rounds)
    } finally {
      await service.stop()
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function importReaders(bench: Bench, dataDir: string): Promise<void> {
  const lines: string[] = []
  for (let index = 1; index <= READERS * PLANTS_PER_READER; index++) {
    const owner = `reader-${index % READERS}`
    lines.push(
      JSON.stringify({
        position: String(index),
        streamId: `plant:${index}:${owner}`,
        streamVersion: 1,
        type: 'PlantCreated',
        schemaVersion: 1,
        data: { id: String(index), name: `plant ${index}`, tag: 'seed' },
        metadata: { owner, requestId: 'seed' },
        recordedAt: '2026-01-01T00:00:00.000Z',
      }),
    )
  }
  const root = bench.serviceRoot ?? new URL('../..', import.meta.url).pathname
  const child = startCli(
    ['events', 'import'],
    { DATA_DIR: dataDir },
    { input: `${lines.join('\n')}\n`, cwd: root },
  )
  if ((await child.exited) !== 0)
    throw new Error(`events import failed: ${await new Response(child.stderr).text()}`)
}
