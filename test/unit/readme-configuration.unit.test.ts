import { expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'
import { SETTINGS, type Setting } from '../../src/settings.ts'

// The README's configuration table is the table the service reads its variables from, row for row.
test("the README's configuration table shows every setting, in order, with its default and meaning", async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8')
  const start = readme.indexOf('\n## Configuration\n')
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1))
  const rows = [...section.matchAll(/^\| `([^`]+)` \| (.+?) \| (.+) \|$/gm)].map(
    ([, name, fallback, meaning]) => ({
      name,
      fallback,
      meaning,
    }),
  )
  const expected = Object.entries(SETTINGS as Record<string, Setting>).map(
    ([name, { fallback, meaning }]) => ({
      name,
      fallback: fallback === undefined ? 'unset' : `\`${fallback}\``,
      meaning,
    }),
  )
  expect(rows).toEqual(expected)
})
