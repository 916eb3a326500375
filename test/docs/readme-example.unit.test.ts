import { expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'

const ROOT = new URL('../..', import.meta.url)

// The docs' in-memory example (docs/testing.md) is this project's test, word for word, so it cannot rot.
test('docs/testing.md shows the in-memory test exactly as test/http/readme-in-memory.int.test.ts runs it', async () => {
  const readme = await readFile(new URL('docs/testing.md', ROOT), 'utf8')
  const example = await readFile(new URL('test/http/readme-in-memory.int.test.ts', ROOT), 'utf8')
  expect(readme).toContain(`\`\`\`ts\n${example}\`\`\`\n`)
})
