import { execFile } from 'node:child_process'
import { lchown, rm } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import process from 'node:process'
import { Failure } from './errors.ts'

// The operating-system user PostgreSQL runs as: undefined for this process's own user.
export type OsUser = { name: string; uid: number; gid: number }

export type Ran = { code: number | null; stdout: string; stderr: string }

// What every program started for PostgreSQL gets as its environment: enough to find programs and
// read text, and nothing of the service's own (its token secret, its key-encryption keys).
export function childEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', ...extra }
}

// Runs a program to its end, as `user` when given (the options Bun and Deno both honour).
export function runAs(user: OsUser | undefined, file: string, args: string[]): Promise<Ran> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      { ...ids(user), env: childEnvironment(), maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0
        // A program that could not be started at all says why in the error alone.
        const why = code === null && String(stderr) === '' ? (error?.message ?? '') : String(stderr)
        done({ code, stdout: String(stdout), stderr: why })
      },
    )
  })
}

export function ids(user: OsUser | undefined): { uid?: number; gid?: number } {
  return user ? { uid: user.uid, gid: user.gid } : {}
}

// Gives `user` a folder this process made. Nothing to do when PostgreSQL runs as this process's user.
// A link that the user put at the folder's name meanwhile (its parent may be the user's) is given
// to the user itself, never what it names.
export async function handOver(user: OsUser | undefined, folder: string): Promise<void> {
  if (user) await lchown(folder, user.uid, user.gid)
}

// Removes a folder handed to `user`, whole: as that user first, so that root does not walk a tree
// that the user may change under it (a folder swapped for a link midway); then what is left, which
// the user could not remove (the folder itself, in a folder of root's), is removed by this process.
export async function removeHandedOver(user: OsUser | undefined, folder: string): Promise<void> {
  if (user) await runAs(user, 'rm', ['-rf', '--', folder])
  await rm(folder, { recursive: true, force: true })
}

// PostgreSQL, running as `user`, must enter every folder down to `folder`: the first it cannot is
// named in one line (a home folder of mode 0700 is the usual one).
export async function checkReach(user: OsUser | undefined, folder: string, what: string): Promise<void> {
  if (!user) return
  const folders: string[] = []
  for (let at = resolve(folder); ; at = dirname(at)) {
    folders.unshift(at)
    if (dirname(at) === at) break
  }
  const script = 'for d do [ -x "$d" ] || { printf %s "$d"; exit 1; }; done'
  const { code, stdout } = await runAs(user, '/bin/sh', ['-c', script, 'reach', ...folders])
  if (code === 0) return
  throw new Failure(
    'EMBEDDED_UNAVAILABLE',
    `${what}: PostgreSQL runs as the user ${user.name} (it refuses root), who cannot enter ${stdout}: let it (chmod o+x ${stdout}), choose a folder it can reach, or set DATABASE_URL`,
  )
}
