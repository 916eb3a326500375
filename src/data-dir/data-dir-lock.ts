import { closeSync, constants, ftruncateSync, writeSync } from 'node:fs'
import { lstat, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import process from 'node:process'
import { Failure } from '../shared/errors.ts'
import type { CheckedFolder } from './own-data-dir.ts'
import { isOwnFile, notOwnFile, openOwnFile } from './own-file.ts'

// How long a busy lock is tried again before the start is refused. A process killed together with
// its parent (a whole process group) may still be closing its files for a few milliseconds after
// the parent has been reaped; a live holder is refused once this is up.
const BUSY_WAIT_MS = 1000

export type Unlock = () => Promise<void>

// One service at a time per data directory. The lock is the operating system's, on `server.pid`,
// and ends with its holder's life. PostgreSQL's own postmaster.pid cannot replace it: it names the
// postmaster, which outlives a killed service (its watchdog stops it a moment later), so it cannot
// tell a second live service, which is refused, from a server left by a dead one, which the next
// start stops; and two services starting at once would race to make and start the same server.
// The process id written into the file is only for people (`kill $(cat data/server.pid)`).
// Returns the lock's release.
export async function lockDataDir(folder: CheckedFolder): Promise<Unlock> {
  const deadline = Date.now() + BUSY_WAIT_MS
  for (;;) {
    const unlock = await tryLockDataDir(folder)
    if (unlock) return unlock
    if (Date.now() >= deadline) throw await dataDirInUse(folder)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

// The lock, or undefined at once when another process holds it. The pid is written into the
// locked file itself, not through a temporary file renamed over it: the lock is the file's, and a
// file renamed into place would be another, unlocked one. The file is opened without following a
// link and written only once it is known to be this user's own.
export async function tryLockDataDir(folder: CheckedFolder): Promise<Unlock | undefined> {
  const file = await tryLockFile(folder.at(LOCK_FILE), join(folder.path, LOCK_FILE))
  if (!file) return undefined
  await file.truncate()
  await file.write(`${process.pid}\n`)
  return async () => {
    await file.truncate()
    file.close()
  }
}

const LOCK_FILE = 'server.pid'

export async function dataDirInUse(folder: CheckedFolder): Promise<Failure> {
  const holder = (await readFile(folder.at(LOCK_FILE), 'utf8').catch(() => '')).trim()
  const by = /^\d+$/.test(holder) ? `process ${holder}` : 'another process'
  return new Failure(
    'DATA_DIR_IN_USE',
    `DATA_DIR ${folder.path} is in use by ${by}; stop it first (one service at a time)`,
  )
}

// An exclusive lock on a file, held through an open file descriptor. The operating system drops it
// when the descriptor closes, which it does for a process that dies however it dies (SIGKILL, out
// of memory, a crash), so no stale lock can outlive its holder. Bun and Deno take the same kind of
// lock (flock), so a server on one and the CLI on the other exclude each other too.
type LockedFile = {
  truncate: () => Promise<unknown>
  write: (text: string) => Promise<unknown>
  close: () => void
}

// Undefined when another open file description holds the lock. Never waits. `path` is how this
// process reaches the file, `named` what a message calls it.
async function tryLockFile(path: string, named: string): Promise<LockedFile | undefined> {
  const deno = (globalThis as { Deno?: DenoFiles }).Deno
  return deno ? tryLockWithDeno(deno, path, named) : tryLockWithFlock(path, named)
}

type DenoFiles = {
  open: (
    path: string,
    options: { read: boolean; write: boolean; create: boolean; mode: number },
  ) => Promise<{
    stat: () => Promise<{ isFile: boolean; uid: number | null; nlink: number | null }>
    tryLock: (exclusive: boolean) => Promise<boolean>
    truncate: (length: number) => Promise<void>
    write: (bytes: Uint8Array) => Promise<number>
    close: () => void
  }>
}

// Deno's open has no O_NOFOLLOW: a link is refused before, which holds in a DATA_DIR no one else
// may write in (data-dir/own-data-dir.ts).
async function tryLockWithDeno(
  deno: DenoFiles,
  path: string,
  named: string,
): Promise<LockedFile | undefined> {
  if ((await lstat(path).catch(() => undefined))?.isSymbolicLink()) throw notOwnFile(named)
  const file = await deno.open(path, { read: true, write: true, create: true, mode: 0o600 })
  if (!isOwnFile(await file.stat())) {
    file.close()
    throw notOwnFile(named)
  }
  if (!(await file.tryLock(true))) {
    file.close()
    return undefined
  }
  return {
    truncate: () => file.truncate(0),
    write: (text) => file.write(new TextEncoder().encode(text)),
    close: () => file.close(),
  }
}

const LOCK_EX = 2
const LOCK_NB = 4
const LIBC_NAMES = ['libc.so.6', 'libc.dylib', 'libc.so']
// Held in a variable so that Deno, which never takes this path, does not try to resolve it.
const BUN_FFI = 'bun:ffi'

// Bun has no file lock of its own: flock(2) from the C library, on a descriptor from node:fs.
async function tryLockWithFlock(path: string, named: string): Promise<LockedFile | undefined> {
  const fd = openOwnFile(path, constants.O_RDWR, named)
  const libc = await openLibc().catch((error: unknown) => {
    closeSync(fd)
    throw error
  })
  const locked = libc.symbols.flock(fd, LOCK_EX | LOCK_NB) === 0
  libc.close()
  if (!locked) {
    closeSync(fd)
    return undefined
  }
  return {
    truncate: async () => ftruncateSync(fd, 0),
    write: async (text) => writeSync(fd, text, 0),
    close: () => closeSync(fd),
  }
}

async function openLibc() {
  const { dlopen, FFIType }: typeof import('bun:ffi') = await import(BUN_FFI)
  const signature = { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } } as const
  let lastError: unknown
  for (const name of LIBC_NAMES) {
    try {
      return dlopen(name, signature)
    } catch (error) {
      lastError = error
    }
  }
  throw new Error(`cannot load the C library to lock a file (tried ${LIBC_NAMES.join(', ')})`, {
    cause: lastError,
  })
}
