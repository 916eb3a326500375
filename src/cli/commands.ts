import type { Command } from './command.ts'
import { dbMigrateCommand } from './db-command.ts'
import { eventsExportCommand, eventsImportCommand } from './events-command.ts'
import { feedStatusCommand } from './feed-command.ts'
import { keysRotateCommand } from './keys-command.ts'
import { ownersEraseCommand } from './owners-command.ts'
import {
  projectionRebuildCommand,
  projectionStatusCommand,
  projectionVerifyCommand,
} from './projection-command.ts'
import { tokenIssueCommand } from './token-command.ts'

// Every command, in the order the help lists them; each is `group verb`.
export const COMMANDS: Command[] = [
  tokenIssueCommand,
  dbMigrateCommand,
  projectionRebuildCommand,
  projectionVerifyCommand,
  projectionStatusCommand,
  eventsExportCommand,
  eventsImportCommand,
  ownersEraseCommand,
  keysRotateCommand,
  feedStatusCommand,
]
