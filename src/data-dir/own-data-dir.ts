import { closeSync, constants, fstatSync, openSync, type Stats } from 'node:fs'
import { lstat, mkdir, stat } from 'node:fs/promises'
import process from 'node:process'
import { Failure } from '../shared/errors.ts'
import { runAs } from '../shared/run-as.ts'
import { unwritableDataDir } from './unwritable-data-dir.ts'

// DATA_DIR holds the token secret and the key-encryption keys, and a service run as root writes
// its lock and its server's log there. A folder that another local user made first, or may write
// in, would hand the service that user's secret, keys and links. So DATA_DIR is made here when it
// is missing, and one that exists is used only if it belongs to this process's user and no one
// else may write in it. A link as DATA_DIR (./data → /srv/plants) is followed only if it is this
// user's or root's, and its target is held to the same rule.
export async function ownDataDir(dataDir: string): Promise<void> {
  // 0755 whatever the umask leaves (0775 under a umask of 0002), which this check would refuse.
  await mkdir(dataDir, { recursive: true, mode: 0o755 }).catch((error: unknown) => {
    throw unwritableDataDir(dataDir, error) ?? error
  })
  const uid = process.getuid?.()
  // Windows: no owners to compare.
  if (uid === undefined) return
  const entry = await lstat(dataDir)
  const found = entry.isSymbolicLink() ? await stat(dataDir) : entry
  // Another user's link could be pointed elsewhere at any time.
  if (entry.isSymbolicLink() && entry.uid !== uid && entry.uid !== 0) {
    throw await belongsToAnother(`DATA_DIR ${dataDir} (a link)`, entry.uid, uid, dataDir)
  }
  if (found.uid !== uid) throw await belongsToAnother(`DATA_DIR ${dataDir}`, found.uid, uid, dataDir)
  if (writableByOthers(found)) {
    throw new Failure(
      'EMBEDDED_UNAVAILABLE',
      `DATA_DIR ${dataDir} may be written by other users than its owner, ${await userName(uid)} (mode ${modeOf(found)}): they could put their own token secret, keys or links in it; chmod go-w ${dataDir}, or set DATA_DIR to a folder of this user's alone`,
    )
  }
}

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
// notOwnFile when it is anything but a file of this user's alone.
export function openOwnFile(path: string, flags: number): number {
  let fd: number
  try {
    fd = openSync(path, flags | constants.O_CREAT | constants.O_NOFOLLOW, 0o600)
  } catch (error) {
    throw (error as NodeJS.ErrnoException).code === 'ELOOP' ? notOwnFile(path) : error
  }
  const found = fstatSync(fd)
  if (isOwnFile({ isFile: found.isFile(), uid: found.uid, nlink: found.nlink })) return fd
  closeSync(fd)
  throw notOwnFile(path)
}

export function notOwnFile(path: string): Failure {
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `${path} is not a file of this user's alone (a link, or another user's file), and is not written through: remove it`,
  )
}

async function belongsToAnother(what: string, owner: number, uid: number, dataDir: string): Promise<Failure> {
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `${what} belongs to ${await userName(owner)}, not to this user, ${await userName(uid)}: another user's folder could hold their token secret, keys and links; if it is that user's store, run as that user; otherwise set DATA_DIR to a folder of this user's (a missing one is made), or, if you made it, chown ${uid} ${dataDir}`,
  )
}

function writableByOthers(found: Stats): boolean {
  return (found.mode & 0o022) !== 0
}

function modeOf(found: Stats): string {
  return `0${(found.mode & 0o777).toString(8)}`
}

// `nobody (uid 65534)`, or the uid alone when the system names no user for it. `id` asks the
// system's user database (NSS), not only /etc/passwd.
async function userName(uid: number): Promise<string> {
  const { code, stdout } = await runAs(undefined, 'id', ['-nu', String(uid)])
  const name = stdout.trim()
  return code === 0 && name !== '' ? `${name} (uid ${uid})` : `uid ${uid}`
}
