import type { Database } from '../database/database.ts'
import type { HeldLock } from '../locks/advisory-lock.ts'
import { takeImportsOut } from '../locks/maintenance-lock.ts'
import { listWorkTables } from '../locks/work-tables.ts'
import { Failure } from '../shared/errors.ts'

// How often the lock is tried again while the erasure waits for the imports.
const CHECK_MS = 200

// An import's staging table holds what it has read so far in the clear: subjects and keys, and a
// plaintext export's names. The import drops it when it ends, but one killed later would leave it
// holding the owner after the erasure: so the erasure's last step runs holding alone the lock each
// import holds shared while its table lives (locks/maintenance-lock.ts), taken once the imports
// running have ended (waited for at most `waitMs`); a dead one's table is dropped
// (locks/work-tables.ts clearDeadWorkTables).
export async function awaitImports(
  db: Database,
  { waitMs, onWait }: { waitMs: number; onWait: (what: string) => void },
): Promise<HeldLock> {
  const deadline = Date.now() + waitMs
  let told = false
  for (;;) {
    const held = await takeImportsOut(db)
    if (held) return held
    const what = `an events import is running (${await runningImports(db)} may hold the owner)`
    if (!told) onWait(`${what}: the erasure waits for it to end`)
    told = true
    if (Date.now() >= deadline)
      throw new Failure(
        'ERASURE_PENDING',
        `${what} after ${waitMs / 1000} s; run the command again once it has ended`,
      )
    await new Promise((resolve) => setTimeout(resolve, CHECK_MS))
  }
}

// The staging tables of the imports that run, for people: the lock says that they run.
async function runningImports(db: Database): Promise<string> {
  const running = (await listWorkTables(db))
    .filter((table) => table.alive && table.name.startsWith('import_staging_'))
    .map((table) => table.name)
  return running.length === 0 ? 'its table' : `its table ${running.join(', ')}`
}
