import { type ParseArgsOptionsConfig, parseArgs } from 'node:util'

// A mistake in how the CLI was called: its message is shown and the exit code is 2.
export class UsageError extends Error {
  override name = 'UsageError'
}

// A command's arguments through `node:util` parseArgs, strict: an unknown option, a missing value
// or more positionals than `positionals` is a usage error showing `usage`.
export function parseArguments<Options extends ParseArgsOptionsConfig>(
  args: string[],
  usage: string,
  options: Options,
  positionals = 0,
) {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: Options; allowPositionals: true }>>
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(`usage: ${usage}`)
    throw error
  }
  if (parsed.positionals.length > positionals) throw new UsageError(`usage: ${usage}`)
  return parsed
}
