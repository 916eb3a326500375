import process from 'node:process'
import { Failure } from '../shared/errors.ts'
import { fullDataDir } from './full-data-dir.ts'

// What the file system says of a folder this process may not make or write: the same on Bun
// (node:fs codes) and Deno (its error classes, and NotCapable for a permission it was not given).
const UNWRITABLE_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'ENOENT'])
const UNWRITABLE_DENO = new Set(['PermissionDenied', 'NotADirectory', 'AlreadyExists', 'NotFound'])

// DATA_DIR's failure as one line naming it and what to do, or undefined for any other error.
export function unwritableDataDir(dataDir: string, error: unknown): Failure | undefined {
  if (!(error instanceof Error)) return undefined
  const { code } = error as { code?: unknown }
  if (error.name === 'NotCapable')
    return failure(
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
  return failure(
    dataDir,
    firstLine(error.message),
    `give ${who} write access to it and its parent, or set DATA_DIR to a folder it may write`,
    error,
  )
}

function failure(dataDir: string, cause: string, remedy: string, error: Error): Failure {
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `DATA_DIR ${dataDir} cannot be written (${cause}): ${remedy}`,
    {},
    {
      cause: error,
    },
  )
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim()
}
