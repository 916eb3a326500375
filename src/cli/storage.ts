import process from 'node:process'
import { type Config, IN_MEMORY } from '../config/config.ts'
import { describeUpgrade } from '../event-log/upgrade.ts'
import { describeMove, moveFromPglite } from '../replay/pglite-move.ts'
import { Failure } from '../shared/errors.ts'
import { openStorage } from '../start/open-store.ts'
import type { Database, DatabaseHandle } from '../store/database.ts'

// The store a command works on, opened (which applies the migrations) for the length of `run`.
// On an embedded DATA_DIR that a service holds, the command works beside it, on its server.
export async function withStorage(
  config: Config,
  run: (db: Database, storage: DatabaseHandle) => Promise<number>,
): Promise<number> {
  // A store in memory lives inside its server process: a command would only see an empty one of its own.
  if (config.storage.kind === 'memory') {
    throw new Failure(
      'BAD_SETTING',
      `DATA_DIR=${IN_MEMORY} lives inside the server process; this command cannot reach it`,
    )
  }
  const storage = await openStorage(config.storage, {
    onProgress: (progress) => process.stderr.write(`${describeUpgrade(progress)}\n`),
    beside: true,
  })
  try {
    const moved = storage.dataDir
      ? await moveFromPglite(storage.db, storage.dataDir, storage.settings.keys ?? [])
      : undefined
    if (moved) process.stderr.write(`${describeMove(moved)}\n`)
    return await run(storage.db, storage)
  } finally {
    await storage.close()
  }
}
