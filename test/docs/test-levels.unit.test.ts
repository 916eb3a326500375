import { expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'
import { Glob } from 'bun'

const root = new URL('../../', import.meta.url).pathname
const LEVELS = ['unit', 'int', 'e2e'] as const

// Every name bun test discovers (*.test, *_test, *.spec, *_spec), so no file runs outside the level scripts.
const discovered = [
  ...new Glob('test/**/*{.test,_test,.spec,_spec}.{ts,tsx,js,jsx,mjs,cjs,mts,cts}').scanSync({ cwd: root }),
].sort()

test('given the test folder, when its test files are listed, then each is named by its level', () => {
  expect(discovered.length).toBeGreaterThan(100)
  const unlevelled = discovered.filter((path) => !/\.(unit|int|e2e)\.test\.ts$/.test(path))
  expect(unlevelled).toEqual([])
})

test('given the package scripts, when each level is run, then it selects exactly its own files', async () => {
  const { scripts } = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as {
    scripts: Record<string, string>
  }
  for (const level of LEVELS) {
    const filter = `.${level}.test.`
    expect(scripts[`test:${level}`]).toContain(` ${filter}`)
    const selected = discovered.filter((path) => path.includes(filter))
    expect(selected.length).toBeGreaterThan(0)
    expect(selected.every((path) => path.endsWith(`.${level}.test.ts`))).toBe(true)
  }
})

test('given the test script, when it runs, then every test file runs: what its parallel run leaves out, its serial run names', async () => {
  const { scripts } = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as {
    scripts: Record<string, string>
  }
  const [everything = '', ...afterwards] = (scripts.test ?? '').split('&&').map((command) => command.trim())
  const argumentsOf = (command: string) => command.split(/\s+/).slice(2)
  // The first run names no file: it finds them all, less the ones it is told to ignore.
  expect(everything).toStartWith('bun test ')
  expect(argumentsOf(everything).filter((argument) => !argument.startsWith('--'))).toEqual([])
  const ignored = argumentsOf(everything)
    .filter((argument) => argument.startsWith('--path-ignore-patterns='))
    .map((argument) => new Glob(argument.slice(argument.indexOf('=') + 1).replaceAll("'", '')))
  const named = afterwards.flatMap((command) =>
    argumentsOf(command).filter((argument) => !argument.startsWith('--')),
  )
  for (const glob of ignored) {
    const left = discovered.filter((path) => glob.match(path))
    expect(left.length).toBeGreaterThan(0)
    for (const path of left)
      expect({ path, named: named.some((name) => path.startsWith(name)) }).toEqual({ path, named: true })
  }
})
