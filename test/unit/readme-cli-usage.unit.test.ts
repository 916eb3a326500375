import { expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'
import { COMMANDS } from '../../src/cli/commands.ts'

// A usage the README quotes (`bun run cli events import [--append]`) is the command's own usage,
// or its beginning: the usage is written once, in the command, and the README may not drift.
test("every usage the README quotes is the command's usage as the CLI prints it", async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8')
  const quoted = [...readme.matchAll(/`bun run cli ([a-z]+ [a-z]+)( [^`]*[[<][^`]*)`/g)]
  expect(quoted.length).toBeGreaterThanOrEqual(5)
  for (const [, name, rest] of quoted) {
    const command = COMMANDS.find((candidate) => candidate.name === name)
    expect({ name, usage: command?.usage.startsWith(`${name}${rest}`) }).toEqual({ name, usage: true })
  }
})
