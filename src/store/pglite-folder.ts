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
