import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import process from 'node:process'
import { tryLockFile } from './file-lock.ts'

export class DataDirInUse extends Error {
  override name = 'DataDirInUse'
}

// How long a busy lock is tried again before the start is refused. A process killed together with
// its parent (a whole process group) may still be closing its files for a few milliseconds after
// the parent has been reaped; a live holder is refused once this is up.
const BUSY_WAIT_MS = 1000

// One process at a time per data directory: two PGlite instances on one directory silently lose
// writes. The lock is the operating system's, on `server.pid`, and ends with its holder's life;
// the process id written into the file is only for people (`kill $(cat data/server.pid)`).
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true })
  const path = join(dataDir, 'server.pid')
  const deadline = Date.now() + BUSY_WAIT_MS
  for (;;) {
    const lock = await tryLockFile(path)
    if (lock) {
      await lock.note(`${process.pid}\n`)
      return lock.release
    }
    if (Date.now() >= deadline) throw new DataDirInUse(await inUseMessage(dataDir, path))
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function inUseMessage(dataDir: string, path: string): Promise<string> {
  const holder = (await readFile(path, 'utf8').catch(() => '')).trim()
  const by = /^\d+$/.test(holder) ? `process ${holder}` : 'another process'
  return `DATA_DIR ${dataDir} is in use by ${by}; stop it first (one process at a time)`
}
