import type { Executor } from '../database/database.ts'
import { listWorkTables } from '../locks/work-tables.ts'
import { Failure } from '../shared/errors.ts'

// How often the running imports are looked at while the erasure waits for them.
const CHECK_MS = 200

// An import's staging table holds what it has read so far in the clear: subjects and keys, and a
// plaintext export's names. The import drops it when it ends, but one killed later would leave it
// holding the owner after the erasure: so the erasure's last steps wait for the imports running to
// end (at most `waitMs`), and a dead one's table is dropped (locks/work-tables.ts clearDeadWorkTables).
export async function awaitImports(
  db: Executor,
  { waitMs, onWait }: { waitMs: number; onWait: (what: string) => void },
): Promise<void> {
  const deadline = Date.now() + waitMs
  let told = false
  for (;;) {
    const running = (await listWorkTables(db))
      .filter((table) => table.alive && table.name.startsWith('import_staging_'))
      .map((table) => table.name)
    if (running.length === 0) return
    const what = `an events import is running (its table ${running.join(', ')} may hold the owner)`
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
