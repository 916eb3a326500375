import { pssMb, treePssMb } from '../support/pss.ts'

// What a user's test process costs with 1 and with 100 createInMemoryStore stores open, each with
// a plant created and listed (test/embedded/fixtures/test-stores.ts): the wall time until all are
// used, and then the summed PSS of its PostgreSQL server's processes and of the whole process tree.
// `bun test/bench/many-test-stores.ts [--runs 3]`; docs/testing.md has the figures.
const ROOT = new URL('../..', import.meta.url).pathname
const runsFlag = process.argv.indexOf('--runs')
const runs = runsFlag === -1 ? 3 : Number(process.argv[runsFlag + 1])

async function measure(count: number) {
  const started = performance.now()
  const child = Bun.spawn(
    ['bun', 'test/embedded/fixtures/test-stores.ts', String(count), '--pids', '--stay'],
    {
      cwd: ROOT,
      stdout: 'pipe',
      stderr: 'inherit',
    },
  )
  const reader = child.stdout.getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { done, value } = await reader.read()
    if (done) throw new Error('the test process ended early')
    text += new TextDecoder().decode(value)
  }
  const seconds = (performance.now() - started) / 1000
  const outcome = JSON.parse(text) as { created: number[]; pids: number[] }
  const server = outcome.pids.reduce((sum, pid) => sum + pssMb(pid), 0)
  const tree = treePssMb(child.pid)
  child.kill('SIGKILL')
  await child.exited
  const ok = outcome.created.filter((status) => status === 200).length
  return { count, ok, seconds, server, tree }
}

for (let run = 1; run <= runs; run++) {
  for (const count of [1, 100]) {
    const { ok, seconds, server, tree } = await measure(count)
    console.log(
      `run ${run}, ${count} stores: ${ok} creates 200, ${seconds.toFixed(1)} s, server ${server.toFixed(0)} MB, process and server ${tree.toFixed(0)} MB`,
    )
  }
}
