import type { ParseArgsOptionsConfig } from 'node:util'
import type { Config } from '../config/config.ts'
import type { Part, SettingName } from '../config/settings.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import { type Parsed, parseArguments } from './arguments.ts'

// One command of the CLI, described once: its usage, help and refusals all come from here.
export type CommandSpec<Options extends ParseArgsOptionsConfig> = {
  // `group verb`, as typed: `projection verify`.
  name: string
  // What follows the name in its usage: `<subject> [--ttl <n>s|m|h|d]`.
  args?: string
  purpose: string
  // Lines the help adds under the purpose: the options' meanings and defaults.
  notes?: string[]
  options?: Options
  // How many arguments it takes (none unless said).
  positionals?: number
  // The variables it reads: whole parts of the configuration, or single names.
  reads: (Part | SettingName)[]
  // What an exit code of 1 means for it, beside a store that cannot be opened.
  refusals?: string
  run: (parsed: Parsed<Options>, config: Config) => Promise<number>
}

export type Command = {
  name: string
  usage: string
  purpose: string
  notes: string[]
  reads: (Part | SettingName)[]
  refusals?: string
  // Parses `args` (a usage error shows the usage) and runs the command.
  run: (args: string[], config: Config) => Promise<number>
}

export function command<Options extends ParseArgsOptionsConfig>(spec: CommandSpec<Options>): Command {
  const usage = spec.args ? `${spec.name} ${spec.args}` : spec.name
  return {
    name: spec.name,
    usage,
    purpose: spec.purpose,
    notes: spec.notes ?? [],
    reads: spec.reads,
    refusals: spec.refusals,
    run: async (args, config) => {
      try {
        const parsed = parseArguments(args, spec.options ?? ({} as Options), spec.positionals)
        return await spec.run(parsed, config)
      } catch (error) {
        if (!isFailure(error, 'BAD_USAGE')) throw error
        throw new Failure('BAD_USAGE', `${error.message}; see ${helpHint(spec.name)}`)
      }
    },
  }
}

// Where a refusal points, in one line: the help of what was typed.
export function helpHint(scope?: string): string {
  return `bun run cli ${scope === undefined ? '' : `${scope} `}--help`
}
