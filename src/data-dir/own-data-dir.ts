import { closeSync, constants, fstatSync, openSync, type Stats } from 'node:fs'
import { lstat, mkdir } from 'node:fs/promises'
import process from 'node:process'
import { Failure } from '../shared/errors.ts'
import { runAs } from '../shared/run-as.ts'
import { lookAt, lookWithLs, readsEverywhere, type UnsafeWay, walkToDataDir } from './data-dir-parents.ts'

// DATA_DIR once checked and opened: `path` as set (what messages name, and what other programs
// are given), and `at`, by which this process reaches `name` in the folder that was checked
// (data-dir/data-dir.ts).
export type CheckedFolder = { path: string; at: (name: string) => string }

// DATA_DIR holds the token secret and the key-encryption keys, and a service run as root writes
// its lock and its server's log there. A folder that another local user made first, or may write
// in, would hand the service that user's secret, keys and links; a folder above it that they may
// change lets them move it away and put their own in its place (a new secret: every token void; a
// new, empty database). So DATA_DIR is used only if every folder on the way to it is this user's or
// root's and writable by no one else (data-dir/data-dir-parents.ts), and it is itself this user's
// and writable by no one else; a missing one is made, once the way to it is known to be safe. A
// link as DATA_DIR (./data → /srv/plants) is followed only if it is this user's or root's, and the
// way to its target is held to the same rule. Returns the descriptor of the folder opened, which
// reaches the folder that was checked whatever is put at its name since; undefined where users
// have no ids (Windows).
export async function openOwnDataDir(dataDir: string): Promise<number | undefined> {
  const uid = process.getuid?.()
  if (uid === undefined) {
    await makeDataDir(dataDir)
    return undefined
  }
  const way = await walkToDataDir(dataDir, uid, readsEverywhere() ? lookAt : lookWithLs)
  if (way.unsafe) throw await unsafeWayFailure(dataDir, way.unsafe, uid)
  if (way.missing) await makeDataDir(dataDir)
  const entry = await lstat(dataDir)
  // Another user's link could be pointed elsewhere at any time.
  if (entry.isSymbolicLink() && entry.uid !== uid && entry.uid !== 0) {
    throw await belongsToAnother(`DATA_DIR ${dataDir} (a link)`, entry.uid, uid, dataDir)
  }
  // Followed when DATA_DIR is a link (of this user's or root's, checked above).
  const fd = openSync(dataDir, DIRECTORY)
  try {
    const found = fstatSync(fd)
    if (found.uid !== uid) throw await belongsToAnother(`DATA_DIR ${dataDir}`, found.uid, uid, dataDir)
    if (writableByOthers(found)) {
      throw new Failure(
        'EMBEDDED_UNAVAILABLE',
        `DATA_DIR ${dataDir} may be written by other users than its owner, ${await userName(uid)} (mode ${modeOf(found)}): they could put their own token secret, keys or links in it; chmod go-w ${dataDir}, or set DATA_DIR to a folder of this user's alone`,
      )
    }
    return fd
  } catch (error) {
    closeSync(fd)
    throw error
  }
}

const DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY

// 0755 whatever the umask leaves (0775 under a umask of 0002), which the check would refuse.
async function makeDataDir(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o755 })
}

async function unsafeWayFailure(dataDir: string, unsafe: UnsafeWay, uid: number): Promise<Failure> {
  const { path, owner, openFolder, mode } = unsafe
  const anyFolder = 'set DATA_DIR to a folder whose every parent only root or this user may change'
  const [what, fix] = openFolder
    ? [
        `belongs to ${await userName(owner)}, in ${openFolder.path}, where every user may make files (mode ${fullMode(openFolder.mode)})`,
        anyFolder,
      ]
    : mode === undefined
      ? [`belongs to ${await userName(owner)}`, `chown ${uid} ${path}, or ${anyFolder}`]
      : [
          `users other than its owner may write in (mode ${fullMode(mode)})`,
          `chmod go-w ${path}, or ${anyFolder}`,
        ]
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `DATA_DIR ${dataDir} lies below ${path}, which ${what}: another user could move DATA_DIR away and put their own in its place; ${fix}`,
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

export function modeOf(found: Stats): string {
  return `0${(found.mode & 0o777).toString(8)}`
}

// With the sticky bit, which modeOf leaves out.
function fullMode(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0')
}

// `nobody (uid 65534)`, or the uid alone when the system names no user for it. `id` asks the
// system's user database (NSS), not only /etc/passwd.
export async function userName(uid: number): Promise<string> {
  const { code, stdout } = await runAs(undefined, 'id', ['-nu', String(uid)])
  const name = stdout.trim()
  return code === 0 && name !== '' ? `${name} (uid ${uid})` : `uid ${uid}`
}
