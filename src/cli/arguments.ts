import { type ParseArgsOptionsConfig, parseArgs } from 'node:util'

// A mistake in how the CLI was called: its message is shown and the exit code is 2.
export class UsageError extends Error {
  override name = 'UsageError'
}

// A command's arguments through `node:util` parseArgs, strict: an unknown option, a missing value
// or more positionals than `positionals` is a usage error naming it and showing `usage`.
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
    // parseArgs names the option in its first sentence; the rest suggests `--` for positionals.
    if (error instanceof TypeError) throw new UsageError(`${firstSentence(error.message)}\nusage: ${usage}`)
    throw error
  }
  if (parsed.positionals.length > positionals) {
    throw new UsageError(`unexpected argument "${parsed.positionals[positionals]}"\nusage: ${usage}`)
  }
  return parsed
}

// The refusal of an option's value, naming both: `--ttl: "5y" is not a duration`.
export function badValue(option: string, value: string, expected: string, usage: string): UsageError {
  return new UsageError(`--${option}: ${JSON.stringify(value)} is not ${expected}\nusage: ${usage}`)
}

function firstSentence(text: string): string {
  return text.split(/\.\s/)[0] ?? text
}
