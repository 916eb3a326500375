import { access } from 'node:fs/promises'
import { join } from 'node:path'

// Where the previous engine, PGlite (PostgreSQL compiled to WebAssembly, in process), kept a
// DATA_DIR's database.
export const PGLITE_FOLDER = 'pgdata'

// Whether DATA_DIR still holds a store of the previous engine, to be moved into this one's server.
export async function holdsPgliteStore(dataDir: string): Promise<boolean> {
  return access(join(dataDir, PGLITE_FOLDER, 'PG_VERSION')).then(
    () => true,
    () => false,
  )
}

// What a move of such a store into this engine's server did: how many events, and where the old
// folder and its export are kept.
export type Moved = { events: number; keptIn: string }

export function describeMove({ events, keptIn }: Moved): string {
  return `moved the store of the previous engine (PGlite) into PostgreSQL: ${events} events; the old folder and its export are kept in ${keptIn} (delete it once no longer needed: the export holds keys)`
}
