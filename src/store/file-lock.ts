import { closeSync, constants, ftruncateSync, openSync, writeSync } from 'node:fs'

// An exclusive lock on a file, held through an open file descriptor. The operating system drops it
// when the descriptor closes, which it does for a process that dies however it dies (SIGKILL, out
// of memory, a crash), so no stale lock can outlive its holder. Bun and Deno take the same kind of
// lock (flock), so a server on one and the CLI on the other exclude each other too.
export type FileLock = {
  // Replaces the file's content (who holds the lock, for people; the lock itself is never read).
  note: (text: string) => Promise<void>
  release: () => Promise<void>
}

// Undefined when another open file description holds the lock. Never waits.
export async function tryLockFile(path: string): Promise<FileLock | undefined> {
  const deno = (globalThis as { Deno?: DenoFiles }).Deno
  return deno ? tryLockWithDeno(deno, path) : tryLockWithFlock(path)
}

type DenoFiles = {
  open: (
    path: string,
    options: { read: boolean; write: boolean; create: boolean; mode: number },
  ) => Promise<{
    tryLock: (exclusive: boolean) => Promise<boolean>
    truncate: (length: number) => Promise<void>
    write: (bytes: Uint8Array) => Promise<number>
    close: () => void
  }>
}

async function tryLockWithDeno(deno: DenoFiles, path: string): Promise<FileLock | undefined> {
  const file = await deno.open(path, { read: true, write: true, create: true, mode: 0o600 })
  if (!(await file.tryLock(true))) {
    file.close()
    return undefined
  }
  return heldLock(
    () => file.truncate(0),
    (text) => file.write(new TextEncoder().encode(text)),
    () => file.close(),
  )
}

const LOCK_EX = 2
const LOCK_NB = 4
const LIBC_NAMES = ['libc.so.6', 'libc.dylib', 'libc.so']
// Held in a variable so that Deno, which never takes this path, does not try to resolve it.
const BUN_FFI = 'bun:ffi'

// Bun has no file lock of its own: flock(2) from the C library, on a descriptor from node:fs.
async function tryLockWithFlock(path: string): Promise<FileLock | undefined> {
  const libc = await openLibc()
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600)
  const locked = libc.symbols.flock(fd, LOCK_EX | LOCK_NB) === 0
  libc.close()
  if (!locked) {
    closeSync(fd)
    return undefined
  }
  return heldLock(
    () => ftruncateSync(fd, 0),
    (text) => writeSync(fd, text, 0),
    () => closeSync(fd),
  )
}

// Either runtime's open file as a FileLock; the file is emptied on release.
function heldLock(truncate: () => unknown, write: (text: string) => unknown, close: () => void): FileLock {
  return {
    note: async (text) => {
      await truncate()
      await write(text)
    },
    release: async () => {
      await truncate()
      close()
    },
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
