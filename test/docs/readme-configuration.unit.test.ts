import { expect, test } from 'bun:test'
import { SETTINGS, type Setting } from '../../src/config/settings.ts'
import { docSection } from '../support/readme.ts'

// The configuration table (docs/configuration.md) is the table the service reads its variables
// from, row for row.
test('the configuration table shows every setting, in order, with its default and meaning', async () => {
  const section = await docSection('Configuration')
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
