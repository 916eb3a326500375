import { expect, test } from 'bun:test'
import { access, constants, readFile } from 'node:fs/promises'
import { readmeBlock } from '../support/readme.ts'

const ROOT = new URL('../..', import.meta.url).pathname

// A newcomer finds, beside the command that serves, the one that installs what the tests need and
// runs them; that command is what CI runs, so it cannot drift from the checks that count.
test("given the README's quick start, then it shows the command that serves and the one that tests", async () => {
  const block = await readmeBlock('Quick start', 'bun run start')
  const commands = block
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '')
  expect(commands).toEqual(['bun install && bun run start', '.ci/run'])
})

test('given the test command, then it is executable and runs the typecheck, the lint and every test', async () => {
  await access(`${ROOT}.ci/run`, constants.X_OK)
  const script = await readFile(`${ROOT}.ci/run`, 'utf8')
  for (const step of ['bun install --frozen-lockfile', 'bun run typecheck', 'bun run lint', 'bun run test'])
    expect(script).toContain(`\n${step}`)
})
