import { closeSync, constants, fstatSync, openSync, type Stats } from 'node:fs'
import process from 'node:process'
import { Failure } from '../shared/errors.ts'
import { modeOf, userName } from './own-data-dir.ts'

// The files this process keeps in DATA_DIR, or writes in a folder it handed to the embedded
// server's user: each opened without following a link, and used only once it is known to be a
// file of this user's alone.

// A secret file of DATA_DIR (its token secret, its key-encryption keys), opened without following
// a link: read only if it is a file of this user's that no one else may read or write.
export async function requireOwnSecretFile(dataDir: string, name: string, found: Stats): Promise<void> {
  const uid = process.getuid?.()
  if (uid === undefined) return
  if (found.isFile() && found.uid === uid && (found.mode & 0o077) === 0) return
  const what = found.isFile()
    ? `a file of ${await userName(found.uid)} with mode ${modeOf(found)}`
    : 'not a file'
  throw new Failure(
    'EMBEDDED_UNAVAILABLE',
    `DATA_DIR ${dataDir}'s ${name} is ${what}, not this user's alone (${await userName(uid)}, mode 0600): another user could have written it; if you did, chown ${uid} and chmod 600 it, or else remove it and whatever was made with it`,
  )
}

// The message of a secret file that is a link (opened with O_NOFOLLOW: ELOOP).
export function secretFileIsLink(dataDir: string, name: string, error: unknown): Failure | undefined {
  if ((error as NodeJS.ErrnoException).code !== 'ELOOP') return undefined
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `DATA_DIR ${dataDir}'s ${name} is a symbolic link, which is not followed: put the file itself there (mode 0600), or remove the link`,
  )
}

// What a file this process writes in DATA_DIR or in a folder it handed to the server's user (a
// lock, a server's log) must be once opened, without following a link: a file of this user's that
// no other name leads to (a hard link another user made would name a file of this user's elsewhere).
export type OpenedFile = { isFile: boolean; uid: number | null; nlink: number | null }

export function isOwnFile(found: OpenedFile): boolean {
  const uid = process.getuid?.()
  return found.isFile && (uid === undefined || found.uid === uid) && found.nlink === 1
}

// Opens `path` to write (made, 0600, when missing) without following a link: its descriptor, or
// notOwnFile (naming it `named`) when it is anything but a file of this user's alone.
export function openOwnFile(path: string, flags: number, named = path): number {
  let fd: number
  try {
    fd = openSync(path, flags | constants.O_CREAT | constants.O_NOFOLLOW, 0o600)
  } catch (error) {
    throw (error as NodeJS.ErrnoException).code === 'ELOOP' ? notOwnFile(named) : error
  }
  const found = fstatSync(fd)
  if (isOwnFile({ isFile: found.isFile(), uid: found.uid, nlink: found.nlink })) return fd
  closeSync(fd)
  throw notOwnFile(named)
}

export function notOwnFile(path: string): Failure {
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `${path} is not a file of this user's alone (a link, or another user's file), and is not written through: remove it`,
  )
}
