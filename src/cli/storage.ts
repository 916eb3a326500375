import process from 'node:process'
import { type Config, IN_MEMORY } from '../config/config.ts'
import { type Database, type DatabaseHandle, openPostgres } from '../database/database.ts'
import type { EarlierStoreMove } from '../opening/data-dir-store.ts'
import { openStorage } from '../opening/open-store.ts'
import { Failure } from '../shared/errors.ts'

// The store a command works on, opened (which applies the migrations) for the length of `run`.
// On an embedded DATA_DIR that a service holds, the command works beside it, on its server.
// `long`: the long work of the CLI (an import, an export, a rebuild, a verification, a rotation)
// runs on connections of its own without the service's statement timeout
// (DATABASE_STATEMENT_TIMEOUT_MS, sized for requests): one statement of it may rightly take longer.
// `moveEarlierStore`: `db migrate` moves a DATA_DIR of the previous engine; other commands refuse one.
export async function withStorage(
  config: Config,
  run: (db: Database, storage: DatabaseHandle) => Promise<number>,
  { long = false, moveEarlierStore }: { long?: boolean; moveEarlierStore?: EarlierStoreMove } = {},
): Promise<number> {
  // A store in memory lives inside its server process: a command would only see an empty one of its own.
  if (config.storage.kind === 'memory') {
    throw new Failure(
      'BAD_SETTING',
      `DATA_DIR=${IN_MEMORY} lives inside the server process; this command cannot reach it`,
    )
  }
  const storage = await openStorage(config.storage, {
    tell: (line) => process.stderr.write(`${line}\n`),
    beside: true,
    moveEarlierStore,
  })
  const untimed = long ? openPostgres({ ...storage.settings, statementTimeoutMs: 0 }) : undefined
  try {
    if (!untimed) return await run(storage.db, storage)
    return await run(untimed.db, { ...storage, db: untimed.db, keyring: untimed.keyring })
  } catch (error) {
    // The store's disk filled during the command (keys rotate, say): said as the store says it.
    throw storage.fullDisk?.(error) ?? error
  } finally {
    await untimed?.close()
    await storage.close()
  }
}
