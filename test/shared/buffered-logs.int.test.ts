import { expect, test } from 'bun:test'

// The service's log lines reach stdout in chunks rather than a write each (src/shared/logger.ts): none is
// lost on exit, and a quiet server's lines still arrive within a moment.
const LOGGER = new URL('../../src/shared/logger.ts', import.meta.url).pathname

function runLogging(script: string) {
  return Bun.spawn(['bun', '-e', `import { createLogger } from ${JSON.stringify(LOGGER)}\n${script}`], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
}

test('every line written before process.exit reaches stdout, in order', async () => {
  // given a process that logs more than one chunk and then exits at once
  const child = runLogging(`
    const logger = createLogger('info')
    for (let n = 0; n < 1000; n++) logger.info({ n }, 'request')
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
    createLogger('info').info('plant store listening')
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
