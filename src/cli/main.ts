import process from 'node:process'
import { type Config, ConfigError, IN_MEMORY, loadConfig } from '../config.ts'
import { ImportRefused } from '../replay/import-events.ts'
import { DataDirInUse } from '../store/data-dir-lock.ts'
import { DatabaseUnreachable } from '../store/unreachable.ts'
import { UsageError } from './arguments.ts'
import { exportCommand, importCommand } from './events-command.ts'
import { feedStatusCommand } from './feed-command.ts'
import { migrateCommand, rebuildCommand, statusCommand, verifyCommand } from './projection-command.ts'
import { issueTokenCommand } from './token-command.ts'

const USAGE = `usage: bun run cli <command>

  token issue <subject> [--ttl 24h]   print an HS256 token for <subject> (local secret or AUTH_JWT_SECRET)
  db migrate                          apply the migrations to the configured database
  projection rebuild [--dry-run]      fold the event log into a fresh projection and swap it in
  projection verify                   exit 1 and show the drift when the projection differs from the log
  projection status                   the last rebuild, the head of the log, and events lacking their row
  events export [--after POSITION]    write the event log as NDJSON to stdout
  events import [--append]            read exported NDJSON from stdin, then rebuild the projection
  feed status                         the last position in the NATS stream beside the head of the log
`

const commands: Record<string, (args: string[], config: Config) => Promise<number>> = {
  'token issue': issueTokenCommand,
  'db migrate': migrateCommand,
  'projection rebuild': rebuildCommand,
  'projection verify': verifyCommand,
  'projection status': statusCommand,
  'events export': exportCommand,
  'events import': importCommand,
  'feed status': feedStatusCommand,
}

async function run(argv: string[]): Promise<number> {
  const name = argv.slice(0, 2).join(' ')
  const command = commands[name]
  if (!command) {
    process.stderr.write(USAGE)
    return 2
  }
  try {
    const config = loadConfig(process.env)
    // A store in memory lives inside its server process: a command would only see an empty one of its own.
    if (name !== 'token issue' && config.storage.kind === 'memory') {
      throw new UsageError(
        `DATA_DIR=${IN_MEMORY} lives inside the server process; this command cannot reach it`,
      )
    }
    return await command(argv.slice(2), config)
  } catch (error) {
    if (error instanceof ConfigError || error instanceof DataDirInUse || error instanceof UsageError) {
      process.stderr.write(`${error.message}\n`)
      return 2
    }
    if (error instanceof DatabaseUnreachable) {
      process.stderr.write(`${error.message}\n`)
      return 1
    }
    if (error instanceof ImportRefused) {
      process.stderr.write(`import refused, nothing was imported: ${error.message}\n`)
      return 1
    }
    throw error
  }
}

process.exitCode = await run(process.argv.slice(2))
