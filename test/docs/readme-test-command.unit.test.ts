import { expect, test } from 'bun:test'
import { access, constants, readFile } from 'node:fs/promises'
import { loadConfig } from '../../src/config/config.ts'
import { SETTINGS } from '../../src/config/settings.ts'
import { docSection, readmeBlock } from '../support/readme.ts'

const ROOT = new URL('../..', import.meta.url).pathname

// A newcomer finds, beside the command that serves, the one that installs what the tests need and
// runs them; that command is what CI runs, so it cannot drift from the checks that count.
test("given the README's quick start, then it shows the command that serves, on another port, and the one that tests", async () => {
  const block = await readmeBlock('Quick start', 'bun run start')
  const commands = block
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '')
  expect(commands).toEqual(['bun install && bun run start', 'PORT=8080 bun run start', '.ci/run'])
})

test('given the test command, then it is executable and runs the typecheck, the lint and every test', async () => {
  await access(`${ROOT}.ci/run`, constants.X_OK)
  const script = await readFile(`${ROOT}.ci/run`, 'utf8')
  for (const step of ['bun install --frozen-lockfile', 'bun run typecheck', 'bun run lint', 'bun run test'])
    expect(script).toContain(`\n${step}`)
})

// A first start on PostgreSQL names what it lacks (config/config.ts); the quick start names the
// same variables beforehand, beside the ones that say where it listens and keeps its data.
test("given the README's quick start, then it names every variable a first start may need", async () => {
  // given what a start on PostgreSQL with nothing else set says it lacks
  const lacking = (() => {
    try {
      loadConfig({ DATABASE_URL: 'postgres://u@h/db' }, ['token keys', 'key-encryption keys'])
      return ''
    } catch (error) {
      return (error as Error).message
    }
  })()
  const named = Object.keys(SETTINGS).filter((name) => new RegExp(`\\b${name}\\b`).test(lacking))
  // when
  const quickStart = await docSection('Quick start')
  // then
  expect(named).toEqual(expect.arrayContaining(['AUTH_JWT_SECRET', 'KEY_ENCRYPTION_KEYS']))
  for (const variable of ['PORT', 'HOST', 'DATA_DIR', 'DATABASE_URL', ...named])
    expect({ variable, named: quickStart.includes(`\`${variable}\``) }).toEqual({ variable, named: true })
})
