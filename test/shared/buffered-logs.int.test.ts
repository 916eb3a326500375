import { expect, test } from 'bun:test'

// The service's log lines reach stdout in chunks rather than a write each (src/shared/logger-output.ts):
// none is lost by a clean exit, which flushes them, and a quiet server's lines still arrive within
// a moment.
const LOGGER = new URL('../../src/shared/logger.ts', import.meta.url).pathname
const OUTPUT = new URL('../../src/shared/logger-output.ts', import.meta.url).pathname

function runLogging(script: string) {
  const imports = `import { createLogger } from ${JSON.stringify(LOGGER)}
    import { stdoutLog } from ${JSON.stringify(OUTPUT)}
    const output = stdoutLog()`
  return Bun.spawn(['bun', '-e', `${imports}\n${script}`], { stdout: 'pipe', stderr: 'pipe' })
}

test('every line written before a clean exit reaches stdout, in order', async () => {
  // given a process that logs more than one chunk, then flushes and exits at once
  const child = runLogging(`
    const logger = createLogger('info', { write: output.write })
    for (let n = 0; n < 1000; n++) logger.info({ n }, 'request')
    await output.flush(5000)
    process.exit(0)`)
  // when
  const lines = (await new Response(child.stdout).text()).trim().split('\n')
  // then
  expect(await child.exited).toBe(0)
  expect(lines.map((line) => JSON.parse(line).n)).toEqual(Array.from({ length: 1000 }, (_, n) => n))
})

test('a lone line of a process that goes on reaches stdout within half a second', async () => {
  // given a process that logs one short line and keeps running
  const child = runLogging(`
    createLogger('info', { write: output.write }).info('plant store listening')
    setTimeout(() => {}, 10_000)`)
  const reader = child.stdout.getReader()
  try {
    // when
    const first = await Promise.race([reader.read(), Bun.sleep(500).then(() => undefined)])
    // then
    expect(new TextDecoder().decode(first?.value)).toContain('plant store listening')
  } finally {
    child.kill()
  }
})

test('lines stdout does not take are dropped past the bound and counted, and the exit still comes', async () => {
  // given a process whose stdout is a pipe nobody reads
  const child = runLogging(`
    const logger = createLogger('info', { write: output.write })
    for (let n = 0; n < 50_000; n++) logger.info({ n, pad: 'x'.repeat(200) }, 'request')
    await output.flush(500)
    console.error(JSON.stringify({ dropped: output.dropped() }))
    process.exit(0)`)
  const stderr = new Response(child.stderr).text()
  // when it logs some 12 MB, more than the pipe and the bound hold, then exits
  const exited = await Promise.race([child.exited, Bun.sleep(15_000).then(() => 'still running')])
  if (exited === 'still running') child.kill('SIGKILL')
  // then it exits, having counted the lines it dropped
  expect(exited).toBe(0)
  expect(JSON.parse(await stderr).dropped).toBeGreaterThan(10_000)
})
