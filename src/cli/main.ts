import process from 'node:process'
import { type Config, IN_MEMORY, loadConfig } from '../config.ts'
import { Failure, isFailure } from '../errors.ts'
import { exportCommand, importCommand } from './events-command.ts'
import { feedStatusCommand } from './feed-command.ts'
import { eraseCommand } from './owners-command.ts'
import { migrateCommand, rebuildCommand, statusCommand, verifyCommand } from './projection-command.ts'
import { issueTokenCommand } from './token-command.ts'

type Command = {
  usage: string
  purpose: string
  run: (args: string[], config: Config) => Promise<number>
}

const COMMANDS: Record<string, Command> = {
  'token issue': {
    usage: 'token issue <subject> [--ttl 24h]',
    purpose: 'print an HS256 token for <subject> (local secret or AUTH_JWT_SECRET)',
    run: issueTokenCommand,
  },
  'db migrate': {
    usage: 'db migrate',
    purpose: 'apply the migrations (and move a DATA_DIR of the PGlite engine into PostgreSQL)',
    run: migrateCommand,
  },
  'projection rebuild': {
    usage: 'projection rebuild [--dry-run]',
    purpose: 'fold the event log into a fresh projection and swap it in',
    run: rebuildCommand,
  },
  'projection verify': {
    usage: 'projection verify',
    purpose: 'exit 1 and show the drift when the projection differs from the log',
    run: verifyCommand,
  },
  'projection status': {
    usage: 'projection status',
    purpose: 'the last rebuild, the head of the log, and events lacking their row',
    run: statusCommand,
  },
  'events export': {
    usage: 'events export [--after POSITION]',
    purpose: 'write the event log as NDJSON to stdout',
    run: exportCommand,
  },
  'events import': {
    usage: 'events import [--append] < events.ndjson',
    purpose: 'read exported NDJSON from stdin, then rebuild the projection',
    run: importCommand,
  },
  'owners erase': {
    usage: 'owners erase <subject> [--wait 30s]',
    purpose: 'forget an owner everywhere: print how many plants they had (CONTRACT §12)',
    run: eraseCommand,
  },
  'feed status': {
    usage: 'feed status',
    purpose: 'the last position in the NATS stream beside the head of the log',
    run: feedStatusCommand,
  },
}

const USAGE = `usage: bun run cli <command> [--help]

${Object.values(COMMANDS)
  .map(({ usage, purpose }) => `  ${usage.padEnd(42)}${purpose}`)
  .join('\n')}
`

const HELP = new Set(['--help', '-h'])

async function run(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    process.stderr.write(USAGE)
    return 2
  }
  if (HELP.has(argv[0] ?? '') || argv[0] === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  const groups = new Set(Object.keys(COMMANDS).map((name) => name.split(' ')[0]))
  const name = argv.slice(0, groups.has(argv[0]) ? 2 : 1).join(' ')
  const command = COMMANDS[name]
  if (!command) {
    process.stderr.write(`unknown command "${name}"\n${USAGE}`)
    return 2
  }
  const args = argv.slice(2)
  if (args.some((arg) => HELP.has(arg))) {
    process.stdout.write(`usage: bun run cli ${command.usage}\n  ${command.purpose}\n`)
    return 0
  }
  try {
    const config = loadConfig(process.env)
    // A store in memory lives inside its server process: a command would only see an empty one of its own.
    if (name !== 'token issue' && config.storage.kind === 'memory') {
      throw new Failure(
        'BAD_USAGE',
        `DATA_DIR=${IN_MEMORY} lives inside the server process; this command cannot reach it`,
      )
    }
    return await command.run(args, config)
  } catch (error) {
    if (!isFailure(error) || error.exitCode === undefined) throw error
    process.stderr.write(`${error.message}\n`)
    return error.exitCode
  }
}

process.exitCode = await run(process.argv.slice(2))
