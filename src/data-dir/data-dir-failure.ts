import { statfs } from 'node:fs/promises'
import process from 'node:process'
import { diskFull } from '../shared/disk-full.ts'
import { Failure, isFailure } from '../shared/errors.ts'

// What the operating system, and the PostgreSQL server that keeps its files in DATA_DIR, say of
// DATA_DIR, as the project's Failures: each one line naming DATA_DIR and what to do. Only
// data-dir/data-dir.ts applies them, at DATA_DIR's edge.

// What the file system says of a folder this process may not make or write: the same on Bun
// (node:fs codes) and Deno (its error classes, and NotCapable for a permission it was not given).
const UNWRITABLE_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'ENOENT'])
const UNWRITABLE_DENO = new Set(['PermissionDenied', 'NotADirectory', 'AlreadyExists', 'NotFound'])
// Less room than this when PostgreSQL would not start: it needs more (a WAL segment is 1 MB, and
// its log may have been cut short before it said why).
const TOO_LITTLE_BYTES = 1024 * 1024

// An error of this process's own work on DATA_DIR's files: a full disk, a folder it may not write,
// a permission Deno was not given; undefined for any other error.
export function dataDirFailure(dataDir: string, error: unknown): Failure | undefined {
  if (!(error instanceof Error)) return undefined
  const { code } = error as { code?: unknown }
  if (error.name === 'NotCapable')
    return unwritable(
      dataDir,
      `Deno was not allowed to write it: ${firstLine(error.message)}`,
      `run Deno with --allow-write=${dataDir} (and --allow-read)`,
      error,
    )
  const full = fullDataDir(dataDir, error)
  if (full) return full
  if (!(typeof code === 'string' && UNWRITABLE_CODES.has(code)) && !UNWRITABLE_DENO.has(error.name))
    return undefined
  const uid = process.getuid?.()
  const who = uid === undefined ? 'this user' : `this user (uid ${uid})`
  return unwritable(
    dataDir,
    firstLine(error.message),
    `give ${who} write access to it and its parent, or set DATA_DIR to a folder it may write`,
    error,
  )
}

// A full DATA_DIR as one line naming it and what to do, however the error surfaced (wrapped by
// drizzle, or in a Failure's message); undefined for any other error.
export function fullDataDir(dataDir: string, error: unknown): Failure | undefined {
  const said = diskFull(error)
  return said === undefined ? undefined : full(dataDir, said, error)
}

// The same for the PostgreSQL server of DATA_DIR, which may stop at its start, or initdb, without
// saying why: a disk with almost no room left is then said to be the cause. A refusal of
// DATA_DIR's own (made from an error of the system, which is its cause) is left as it is.
export async function fullDataDirAtStart(dataDir: string, error: unknown): Promise<Failure | undefined> {
  const said = fullDataDir(dataDir, error)
  if (said || !isFailure(error, 'EMBEDDED_UNAVAILABLE') || error.cause !== undefined) return said
  const room = await statfs(dataDir).catch(() => undefined)
  if (room === undefined || room.bavail * room.bsize >= TOO_LITTLE_BYTES) return undefined
  return full(dataDir, `${Math.floor((room.bavail * room.bsize) / 1024)} kB left`, error)
}

function full(dataDir: string, said: string, error: unknown): Failure {
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `DATA_DIR ${dataDir} is full (${said}): free space on its file system (df ${dataDir}) or move DATA_DIR to a larger one, then try again`,
    {},
    { cause: error },
  )
}

function unwritable(dataDir: string, cause: string, remedy: string, error: Error): Failure {
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `DATA_DIR ${dataDir} cannot be written (${cause}): ${remedy}`,
    {},
    { cause: error },
  )
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim()
}
