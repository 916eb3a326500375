import { expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'
import { LOCK_TABLE_HEADER, LOCKS, lockTableRow } from '../../src/locks/lock-registry.ts'

// The rows of the first table after `heading`, each split into its cells.
function tableAfter(markdown: string, heading: string): string[][] {
  const section = markdown.slice(markdown.indexOf(`\n${heading}\n`))
  const lines = section.split('\n')
  const first = lines.findIndex((line) => line.startsWith('|'))
  const rows: string[][] = []
  for (const line of lines.slice(first)) {
    if (!line.startsWith('|')) break
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
  }
  return rows.filter((row) => !row.every((cell) => /^-+$/.test(cell)))
}

test('docs/operating.md lists the locks of the registry, each row as the registry has it', async () => {
  // given
  const markdown = await readFile(new URL('../../docs/operating.md', import.meta.url), 'utf8')
  // when
  const [header, ...rows] = tableAfter(markdown, '### The locks')
  // then
  expect(header).toEqual(LOCK_TABLE_HEADER)
  expect(rows).toEqual(Object.values(LOCKS).map(lockTableRow))
})
