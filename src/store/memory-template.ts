import { readFile } from 'node:fs/promises'
import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { type DatabaseHandle, EMBEDDED_EXTENSIONS, openEmbedded } from './database.ts'
import { migrateEmbeddedDatabase } from './migrate.ts'

// A new PGlite reads and compiles its WebAssembly and runs initdb, then the migrations run:
// seconds. Done once into a template (the compiled module, PGlite's file bundle and a migrated data
// directory), every store opened from it starts in a fraction of that, empty and apart from the
// others.
export type MemoryTemplate = { wasmModule: WebAssembly.Module; fsBundle: Blob; dataDir: Blob }

export async function createMemoryTemplate(): Promise<MemoryTemplate> {
  const [wasm, bundle] = await Promise.all([packageFile('pglite.wasm'), packageFile('pglite.data')])
  const wasmModule = await WebAssembly.compile(wasm)
  const fsBundle = new Blob([new Uint8Array(bundle)])
  const client = await PGlite.create({
    pgliteWasmModule: wasmModule,
    fsBundle,
    extensions: EMBEDDED_EXTENSIONS,
  })
  try {
    await migrateEmbeddedDatabase({ db: drizzle({ client }), kind: 'embedded', close: () => client.close() })
    // The dump copies files: what the migrations left in shared buffers must be on them first.
    await client.exec('checkpoint')
    return { wasmModule, fsBundle, dataDir: await client.dumpDataDir('none') }
  } finally {
    await client.close()
  }
}

export function openFromTemplate(template: MemoryTemplate): Promise<DatabaseHandle> {
  const { wasmModule, fsBundle, dataDir } = template
  return openEmbedded(undefined, { pgliteWasmModule: wasmModule, fsBundle, loadDataDir: dataDir })
}

function packageFile(name: string): Promise<Uint8Array> {
  return readFile(new URL(import.meta.resolve(`@electric-sql/pglite/${name}`)))
}
