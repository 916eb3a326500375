import { expect, test } from 'bun:test'
import { COMMANDS } from '../../src/cli/commands.ts'
import { docFiles } from '../support/readme.ts'

// A usage the docs quote (`bun run cli events import [--append]`) is the command's own usage, or
// its beginning: the usage is written once, in the command, and the docs may not drift. A usage
// has an option in brackets or a <placeholder>; a command run with its input or output redirected
// (`< export.ndjson`, `> export.ndjson`) is an example, not a usage.
test("every usage the docs quote is the command's usage as the CLI prints it", async () => {
  const readme = (await docFiles()).map(({ text }) => text).join('\n')
  const quoted = [...readme.matchAll(/`bun run cli ([a-z]+ [a-z]+)( [^`<>]*(?:\[|<[a-z])[^`]*)`/g)]
  expect(quoted.length).toBeGreaterThanOrEqual(5)
  for (const [, name, rest] of quoted) {
    const command = COMMANDS.find((candidate) => candidate.name === name)
    expect({ name, usage: command?.usage.startsWith(`${name}${rest}`) }).toEqual({ name, usage: true })
  }
})
