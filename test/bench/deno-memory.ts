// Where the memory of the service's tree goes, under Bun and under Deno: the summed PSS of the
// service and its embedded PostgreSQL, idle, 5 s after /health first answers, and the service's own
// split into anonymous memory (heaps) and file-backed pages (the runtime's binary and libraries).
//
//   flock /tmp/plant-store-bench.lock bun test/bench/deno-memory.ts [runs]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { denoServerCommand } from '../support/deno.ts'
import { processTree } from '../support/pss.ts'
import { SERVER_COMMAND } from '../support/server-process.ts'

const ROOT = new URL('../..', import.meta.url).pathname
const runs = Number(process.argv[2] ?? '3')

function rollup(pid: number) {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
  const mb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0) / 1024
  return { pss: mb('Pss'), anon: mb('Pss_Anon'), file: mb('Pss_File') }
}

async function measure(runtime: 'bun' | 'deno') {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-deno-memory-'))
  const dataDir = join(folder, 'data')
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const command = runtime === 'bun' ? SERVER_COMMAND : denoServerCommand(dataDir)
  const child = Bun.spawn(command, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: folder,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  try {
    for (;;) {
      if (
        await fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break
      await Bun.sleep(100)
    }
    await Bun.sleep(5000)
    const [service, ...postgres] = processTree(child.pid).map(rollup)
    const sum = (rows: { pss: number }[]) => rows.reduce((total, row) => total + row.pss, 0)
    return {
      runtime,
      treeMb: Number((sum(postgres) + (service?.pss ?? 0)).toFixed(1)),
      serviceMb: Number((service?.pss ?? 0).toFixed(1)),
      serviceAnonMb: Number((service?.anon ?? 0).toFixed(1)),
      serviceFileMb: Number((service?.file ?? 0).toFixed(1)),
      postgresMb: Number(sum(postgres).toFixed(1)),
    }
  } finally {
    child.kill('SIGTERM')
    await child.exited
    rmSync(folder, { recursive: true, force: true })
  }
}

for (let run = 0; run < runs; run++)
  for (const runtime of ['bun', 'deno'] as const) console.log(JSON.stringify(await measure(runtime)))
