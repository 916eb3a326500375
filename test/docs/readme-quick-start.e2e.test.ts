import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rm, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { makeDataDir } from '../support/data-dir.ts'
import { readmeBlock, runBlock } from '../support/readme.ts'

// The README's quick start line that chooses the port, run as written in a folder laid out as a
// clone is (its own ./data): only the port changes, to one that is free here.
const ROOT = new URL('../..', import.meta.url).pathname

let checkout: string
beforeAll(async () => {
  checkout = await makeDataDir('plant-store-quick-start-')
  for (const entry of ['package.json', 'bunfig.toml', 'tsconfig.json', 'src', 'db', 'node_modules'])
    await symlink(join(ROOT, entry), join(checkout, entry))
})
afterAll(async () => {
  await rm(checkout, { recursive: true, force: true })
})

function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data: () => {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

test("given the README's quick start, when its line with PORT runs, then the service listens on that port", async () => {
  // given
  const block = await readmeBlock('Quick start', 'PORT=')
  const line = block.split('\n').find((text) => text.startsWith('PORT=')) ?? ''
  const [, shown = ''] = /^PORT=(\d+) /.exec(line) ?? []
  const port = String(freePort())
  // when
  const run = await runBlock(line.replace(/#.*$/, ''), {
    cwd: checkout,
    replace: { [`PORT=${shown}`]: `PORT=${port}` },
    stopWhen: (output) => output.includes('plant store listening'),
  })
  // then
  expect(shown).not.toBe('')
  expect(run.output).toContain(`plant store listening on 0.0.0.0:${port}`)
}, 120_000)
