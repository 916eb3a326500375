import { type ParseArgsOptionsConfig, parseArgs } from 'node:util'
import { Failure } from '../shared/errors.ts'

export type Parsed<Options extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: Options; allowPositionals: true }>
>

// Whether `--help` or `-h` comes before `--`, which ends the options: after it, `--help` is an
// argument like any other (an owner may be called that).
export function asksForHelp(args: string[]): boolean {
  const end = args.indexOf('--')
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h')
}

// A command's arguments through `node:util` parseArgs, strict: an unknown option, a missing value
// or more positionals than `positionals` is a usage error naming it. `--` ends the options.
export function parseArguments<Options extends ParseArgsOptionsConfig>(
  args: string[],
  options: Options,
  positionals = 0,
): Parsed<Options> {
  const unknown = unknownOption(args, options)
  if (unknown) throw unknown
  let parsed: Parsed<Options>
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (error) {
    // Its messages may take several lines; a refusal is one.
    if (error instanceof TypeError)
      throw new Failure('BAD_USAGE', error.message.replace(/\s*\n\s*/g, ' ').replace(/\.$/, ''))
    throw error
  }
  if (parsed.positionals.length > positionals) {
    throw new Failure('BAD_USAGE', `unexpected argument "${parsed.positionals[positionals]}"`)
  }
  return parsed
}

// parseArgs names an unknown option by its first letter only (`-dash` is `d`, or `-d` on Node)
// and its hint repeats that letter: this names what was typed and how to pass it as an argument.
function unknownOption(args: string[], options: ParseArgsOptionsConfig): Failure | undefined {
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true })
  for (const token of tokens) {
    if (token.kind !== 'option' || Object.hasOwn(options, token.name)) continue
    if (Object.values(options).some((option) => option.short === token.name)) continue
    const typed = args[token.index] ?? token.rawName
    const within = typed === token.rawName ? '' : ` (in "${typed}")`
    return new Failure(
      'BAD_USAGE',
      `unknown option '${token.rawName}'${within}; an argument that starts with "-" goes after "--", as in: -- ${typed}`,
    )
  }
  return undefined
}

// The refusal of an option's value, naming both: `--ttl: "5y" is not a duration`.
export function badValue(option: string, value: string, expected: string): Failure {
  return new Failure('BAD_USAGE', `--${option}: ${JSON.stringify(value)} is not ${expected}`)
}
