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
  expect(scripts.test).not.toMatch(/\.(unit|int|e2e)\.test\./)
})
