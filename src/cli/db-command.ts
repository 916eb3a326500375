import { moveFromPglite } from '../transfer/pglite-move.ts'
import { command } from './command.ts'
import { withStorage } from './storage.ts'

export const dbMigrateCommand = command({
  name: 'db migrate',
  purpose: 'apply the migrations (and move a DATA_DIR of the PGlite engine into PostgreSQL)',
  reads: ['storage'],
  // Opening the storage applies the migrations.
  run: (_parsed, config) => withStorage(config, async () => 0, { moveEarlierStore: moveFromPglite }),
})
