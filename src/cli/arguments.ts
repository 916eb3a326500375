import { type ParseArgsOptionsConfig, parseArgs } from 'node:util'
import { Failure } from '../errors.ts'

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
    if (error instanceof TypeError)
      throw new Failure('BAD_USAGE', `${firstSentence(error.message)}\nusage: ${usage}`)
    throw error
  }
  if (parsed.positionals.length > positionals) {
    throw new Failure(
      'BAD_USAGE',
      `unexpected argument "${parsed.positionals[positionals]}"\nusage: ${usage}`,
    )
  }
  return parsed
}

// The refusal of an option's value, naming both: `--ttl: "5y" is not a duration`.
export function badValue(option: string, value: string, expected: string, usage: string): Failure {
  return new Failure('BAD_USAGE', `--${option}: ${JSON.stringify(value)} is not ${expected}\nusage: ${usage}`)
}

function firstSentence(text: string): string {
  return text.split(/\.\s/)[0] ?? text
}
