import { lstat, readlink } from 'node:fs/promises'
import { dirname, isAbsolute, join, resolve, sep } from 'node:path'
import { runAs } from '../shared/run-as.ts'

// What lets another user change the way to DATA_DIR: a folder on it that is not this user's or
// root's, or that others may write in without the sticky bit; or, in a folder others may write in
// with the sticky bit (such as /tmp), a link of another user's, which they may replace. Any of
// these lets them move DATA_DIR away and put their own in its place.
export type UnsafeWay = {
  // The folder or link that is not safe, and its owner.
  path: string
  owner: number
  // Set for a link: the open folder it is in, and that folder's mode.
  openFolder?: { path: string; mode: number }
  // Set for a folder that others may write in: its mode.
  mode?: number
}

// What the walk needs to know of a path, not following a link; undefined when there is nothing.
export type Entry = { kind: 'folder' | 'link' | 'other'; uid: number; mode: number; target?: string }
export type Look = (path: string) => Promise<Entry | undefined>

// A link followed as the system follows them, at most this many times (Linux's own limit).
const MAX_LINKS = 40

// Walks the way to `dataDir` as the system does, from `/`, following each link where it points,
// and returns the first step that is not safe, or whether a part of the way (DATA_DIR, or a folder
// above it) is not made yet, which ends the walk. DATA_DIR itself (a folder or a link) is checked
// apart (data-dir/own-data-dir.ts). A folder after a sticky one is held to the same rule as any
// other, so a sticky folder is safe only above folders of this user's or root's.
export async function walkToDataDir(
  dataDir: string,
  uid: number,
  look: Look = lookAt,
): Promise<{ unsafe?: UnsafeWay; missing?: true }> {
  const names = resolve(dataDir).split(sep).filter(Boolean)
  let folder: string = sep
  let here = await lookAtFolder(look, folder)
  const unsafe = unsafeFolder(folder, here, uid)
  if (unsafe) return { unsafe }
  for (let links = 0; names.length > 0; ) {
    const name = names.shift() as string
    if (name === '..' || name === '.') {
      folder = name === '..' ? dirname(folder) : folder
      here = await lookAtFolder(look, folder)
      continue
    }
    const path = join(folder, name)
    const entry = await look(path)
    const last = names.length === 0
    if (entry === undefined) return { missing: true }
    if (entry.kind === 'link') {
      if (!last && openToOthers(here.mode) && !trusted(entry.uid, uid))
        return { unsafe: { path, owner: entry.uid, openFolder: { path: folder, mode: here.mode } } }
      // So many links: the open that follows says ELOOP.
      if (++links > MAX_LINKS) return {}
      const target = entry.target ?? ''
      names.unshift(...target.split(sep).filter(Boolean))
      if (isAbsolute(target)) [folder, here] = [sep, await lookAtFolder(look, sep)]
      continue
    }
    if (last) return {}
    const unsafeHere = unsafeFolder(path, entry, uid)
    if (unsafeHere) return { unsafe: unsafeHere }
    ;[folder, here] = [path, entry]
  }
  return {}
}

async function lookAtFolder(look: Look, path: string): Promise<Entry> {
  const entry = await look(path)
  if (entry === undefined)
    throw Object.assign(new Error(`ENOENT: no such folder, ${path}`), { code: 'ENOENT' })
  return entry
}

function unsafeFolder(path: string, found: Entry, uid: number): UnsafeWay | undefined {
  if (found.kind !== 'folder') return undefined
  if (!trusted(found.uid, uid)) return { path, owner: found.uid }
  if (openToOthers(found.mode) && (found.mode & STICKY) === 0)
    return { path, owner: found.uid, mode: found.mode }
  return undefined
}

const STICKY = 0o1000

function openToOthers(mode: number): boolean {
  return (mode & 0o022) !== 0
}

function trusted(owner: number, uid: number): boolean {
  return owner === uid || owner === 0
}

// The file system's own answer.
export async function lookAt(path: string): Promise<Entry | undefined> {
  const found = await lstat(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  })
  if (found === undefined) return undefined
  const kind = found.isDirectory() ? 'folder' : found.isSymbolicLink() ? 'link' : 'other'
  return {
    kind,
    uid: found.uid,
    mode: found.mode,
    target: kind === 'link' ? await readlink(path) : undefined,
  }
}

// Deno's permissions go by path, and one given read access to DATA_DIR alone (docs/operating.md)
// may not look at the folders above it: it asks ls(1) instead, as it asks id(1) for a user's name
// (both are programs --allow-run lets it start). `ls -ldn` prints the mode as letters, the owner's
// uid, and a link's target after its name (POSIX).
export async function lookWithLs(path: string): Promise<Entry | undefined> {
  const { code, stdout, stderr } = await runAs(undefined, 'ls', ['-ldn', '--', path])
  if (code !== 0 && /no such file/i.test(stderr)) return undefined
  const [letters = '', , uid = ''] = stdout.split(/\s+/)
  if (code !== 0 || !/^[dl-]/.test(letters) || !/^\d+$/.test(uid))
    throw new Error(`ls -ldn ${path}: ${stderr.trim() || stdout.trim()}`)
  const kind = letters[0] === 'd' ? 'folder' : letters[0] === 'l' ? 'link' : 'other'
  const arrow = `${path} -> `
  const at = stdout.indexOf(arrow)
  if (kind === 'link' && at < 0) throw new Error(`ls -ldn ${path}: no target in ${stdout.trim()}`)
  const target = kind === 'link' ? stdout.slice(at + arrow.length).replace(/\n$/, '') : undefined
  return { kind, uid: Number(uid), mode: modeOfLetters(letters), target }
}

// `drwxrwxrwt` → 0o41777 less the type: the permission bits and the sticky bit the walk reads.
function modeOfLetters(letters: string): number {
  const bits = letters.slice(1, 10)
  let mode = 0
  for (const [index, letter] of [...bits].entries())
    if (letter !== '-' && letter !== 'S' && letter !== 'T') mode |= 1 << (8 - index)
  if (bits[8] === 't' || bits[8] === 'T') mode |= STICKY
  return mode
}

// Whether this process may look at every folder itself: not under a Deno whose read access is
// narrowed.
export function readsEverywhere(): boolean {
  const deno = (globalThis as { Deno?: { permissions: { querySync: (d: object) => { state: string } } } })
    .Deno
  return deno === undefined || deno.permissions.querySync({ name: 'read', path: sep }).state === 'granted'
}
