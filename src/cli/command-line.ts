import process from 'node:process'
import { loadConfig } from '../config/config.ts'
import { findUnknownSettings } from '../config/unknown-settings.ts'
import { unreachableDatabase } from '../shared/database-error.ts'
import { exitCodeOf, isFailure } from '../shared/errors.ts'
import { turnOffCoreDumps } from '../start/core-dumps.ts'
import { asksForHelp } from './arguments.ts'
import { helpHint } from './command.ts'
import { COMMANDS } from './commands.ts'
import { helpText } from './help.ts'

const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h' || arg === 'help'

async function run(argv: string[]): Promise<number> {
  const [groupName, verb] = argv
  if (groupName === undefined) return usageError(helpText(COMMANDS))
  if (isHelp(groupName)) return help(helpText(COMMANDS))
  const group = COMMANDS.filter(({ name }) => name.startsWith(`${groupName} `))
  if (group.length === 0) return usageError(`unknown command "${groupName}"; see ${helpHint()}\n`)
  if (verb === undefined) return usageError(helpText(group, groupName))
  if (isHelp(verb)) return help(helpText(group, groupName))
  const command = group.find(({ name }) => name === `${groupName} ${verb}`)
  if (!command) return usageError(`unknown command "${groupName} ${verb}"; see ${helpHint(groupName)}\n`)
  const args = argv.slice(2)
  if (asksForHelp(args)) return help(helpText([command]))
  // A command holds keys as the service does; where the limit cannot be set, the shell's stands.
  await turnOffCoreDumps()
  try {
    // A misspelt variable would quietly pick another store (DATABSE_URL: the embedded one).
    for (const { message } of findUnknownSettings(process.env)) process.stderr.write(`${message}\n`)
    return await command.run(args, loadConfig(process.env))
  } catch (error) {
    // A database or a pooler that refused the connection: one line, as the service's start says it.
    const failure = isFailure(error) ? error : unreachableDatabase(error)
    if (failure?.exitCode === undefined) throw error
    process.stderr.write(`${failure.message}\n`)
    return failure.exitCode
  }
}

function help(text: string): number {
  process.stdout.write(text)
  return 0
}

function usageError(text: string): number {
  process.stderr.write(text)
  return exitCodeOf('BAD_USAGE') ?? 2
}

process.exitCode = await run(process.argv.slice(2))
