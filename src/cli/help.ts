import { type Part, SETTINGS, type Setting, type SettingName } from '../config/settings.ts'
import { exitCodeOf } from '../shared/errors.ts'
import type { Command } from './command.ts'

// The help of one command, of a group (`projection`) or of them all: the usage, the variables
// read (from the configuration table) and the exit codes. `scope` is what precedes `<command>`.
export function helpText(commands: Command[], scope?: string): string {
  const [only] = commands
  // Each purpose in one column, two spaces past the longest usage.
  const width = Math.max(...commands.map(({ usage }) => usage.length)) + 2
  const lines =
    commands.length === 1 && only && scope === undefined
      ? [
          `usage: bun run cli ${only.usage}`,
          `  ${only.purpose}`,
          ...only.notes.map((note) => `  ${note}`),
          '  -- ends the options: what follows it is an argument, even "--help" or "-x"',
        ]
      : [
          `usage: bun run cli ${scope ? `${scope} ` : ''}<command> [--help]`,
          '',
          ...commands.map(({ usage, purpose }) => `  ${usage.padEnd(width)}${purpose}`),
          '',
          `  bun run cli ${scope ? `${scope} ` : ''}<command> --help shows one command's options`,
        ]
  return [...lines, '', ...variablesRead(commands), '', ...exitCodes(commands)].join('\n').concat('\n')
}

function variablesRead(commands: Command[]): string[] {
  const reads = new Set(commands.flatMap((command) => command.reads))
  const table: Record<string, Setting> = SETTINGS
  const names = Object.keys(table).filter(
    (name) => reads.has(name as SettingName) || reads.has(table[name]?.part as Part),
  )
  const width = Math.max(...names.map((name) => name.length)) + 2
  return [
    'environment variables read (default in brackets):',
    ...names.map((name) => {
      const { fallback, meaning } = table[name] ?? { meaning: '' }
      const text = `${meaning.replaceAll('`', '')}${fallback === undefined ? '' : ` [${fallback}]`}`
      return `  ${name.padEnd(width)}${text}`
    }),
  ]
}

function exitCodes(commands: Command[]): string[] {
  const several = commands.length > 1
  const opensStore = commands.some((command) => command.reads.includes('storage'))
  const refusals = commands.flatMap(({ name, refusals }) =>
    refusals ? [`  1  ${several ? `${name}: ` : ''}${refusals}`] : [],
  )
  return [
    'exit codes:',
    '  0  done',
    ...refusals,
    ...(opensStore
      ? ['  1  the store cannot be used (DATA_DIR in use, the database unreachable), said in one line']
      : []),
    `  ${exitCodeOf('BAD_USAGE')}  a bad argument or setting, named in one line`,
  ]
}
