import { closeSync, fstatSync, statSync } from 'node:fs'
import { join } from 'node:path'
import process from 'node:process'
import type { Failure } from '../shared/errors.ts'
import { dataDirFailure, fullDataDir, fullDataDirAtStart } from './data-dir-failure.ts'
import { dataDirInUse, lockDataDir, tryLockDataDir, type Unlock } from './data-dir-lock.ts'
import {
  readLocalFile,
  removeSecretFile,
  removeUnplacedCopies,
  type SecretFileOptions,
  type SecretFileSteps,
  writeSecretFile,
} from './local-file.ts'
import { type CheckedFolder, openOwnDataDir } from './own-data-dir.ts'
import { holdsPgliteStore } from './pglite-folder.ts'

// DATA_DIR, opened once it is known to be ours all the way down (data-dir/own-data-dir.ts): every
// file of it is reached in the folder that was checked, and every error of the system about it
// (full, unwritable, another user's, in use) comes out as the project's Failure, here and nowhere
// else. `path` is DATA_DIR as set, for messages and for the programs given its paths by name (the
// embedded PostgreSQL server, the move of a store of the previous engine).
export type DataDir = CheckedFolder & {
  readSecret: (name: string) => Promise<string | undefined>
  writeSecret: (name: string, text: string, options?: SecretFileOptions) => Promise<string>
  removeSecret: (name: string, steps?: SecretFileSteps) => Promise<void>
  // At the start of the process that holds DATA_DIR: the copies writes killed midway left.
  removeUnplacedCopies: () => Promise<string[]>
  // One service at a time (data-dir/data-dir-lock.ts): `lock` waits a moment for a holder that is
  // ending, `tryLock` not at all.
  lock: () => Promise<Unlock>
  tryLock: () => Promise<Unlock | undefined>
  inUse: () => Promise<Failure>
  // Whether it still holds a store of the previous engine (data-dir/pglite-folder.ts).
  holdsPgliteStore: () => Promise<boolean>
  // Runs work on what DATA_DIR holds (its PostgreSQL server's start, its database): a disk that
  // fills meanwhile, or a server that would not start on one with no room left, is said as
  // DATA_DIR's.
  within: <T>(work: () => Promise<T>) => Promise<T>
  // The same for an error met later, by a command working on the store: a Failure, or undefined.
  fullDisk: (error: unknown) => Failure | undefined
  close: () => void
}

export async function openDataDir(path: string): Promise<DataDir> {
  const said = edge(path)
  const fd = await said(openOwnDataDir)(path)
  const base = fd === undefined ? path : (descriptorPath(fd) ?? path)
  const folder: CheckedFolder = { path, at: (name) => join(base, name) }
  return {
    ...folder,
    readSecret: said((name: string) => readLocalFile(folder, name)),
    writeSecret: said((name: string, text: string, options?: SecretFileOptions) =>
      writeSecretFile(folder, name, text, options),
    ),
    removeSecret: said((name: string, steps?: SecretFileSteps) => removeSecretFile(folder, name, steps)),
    removeUnplacedCopies: said(() => removeUnplacedCopies(folder)),
    lock: said(() => lockDataDir(folder)),
    tryLock: said(() => tryLockDataDir(folder)),
    inUse: () => dataDirInUse(folder),
    holdsPgliteStore: () => holdsPgliteStore(folder.at('.')),
    within: async (work) => {
      try {
        return await work()
      } catch (error) {
        throw (await fullDataDirAtStart(path, error)) ?? error
      }
    },
    fullDisk: (error) => fullDataDir(path, error),
    close: () => {
      if (fd !== undefined) closeSync(fd)
    },
  }
}

// Opens DATA_DIR for `work` alone, and closes it after.
export async function withDataDir<T>(path: string, work: (dataDir: DataDir) => Promise<T>): Promise<T> {
  const dataDir = await openDataDir(path)
  try {
    return await work(dataDir)
  } finally {
    dataDir.close()
  }
}

// The one place where this process's own work on DATA_DIR's files has its errors said as DATA_DIR's.
function edge(dataDir: string) {
  return <A extends unknown[], R>(work: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await work(...args)
      } catch (error) {
        throw dataDirFailure(dataDir, error) ?? error
      }
    }
}

type DenoPermissions = {
  permissions: { querySync: (descriptor: { name: 'read' | 'write'; path: string }) => { state: string } }
}

// The folder's own path through its descriptor, Linux's /proc/self/fd/N: a name looked up below it
// is looked up in the folder the descriptor holds, as openat(2) would, whatever is put at DATA_DIR's
// name since (node:fs has no openat). Undefined where there is none (macOS has no such path for a
// folder), and under Deno when it may not read and write there (its permissions go by the name
// given, so --allow-write=DATA_DIR does not cover it): DATA_DIR's files are then reached by name,
// which the check of every folder above it keeps to the same folder.
function descriptorPath(fd: number): string | undefined {
  if (process.platform !== 'linux') return undefined
  const path = `/proc/self/fd/${fd}`
  const deno = (globalThis as { Deno?: DenoPermissions }).Deno
  const allowed = (name: 'read' | 'write') => deno?.permissions.querySync({ name, path }).state === 'granted'
  if (deno && !(allowed('read') && allowed('write'))) return undefined
  try {
    const [through, held] = [statSync(path), fstatSync(fd)]
    return through.dev === held.dev && through.ino === held.ino ? path : undefined
  } catch {
    return undefined
  }
}
