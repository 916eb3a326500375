import process from 'node:process'
import { setTimeout as sleep } from 'node:timers/promises'
import { Failure } from '../shared/errors.ts'
import { type OsUser, runAs } from '../shared/run-as.ts'
import { exists, lastLines } from './cluster.ts'

// Who PostgreSQL runs as. It refuses root, so a service run as root runs it as a system user of
// the service's alone, made the first time it is needed. Not the distribution's `postgres`: that
// user owns any other PostgreSQL on the machine, whose server (and whatever program its
// superusers make it run) would then reach this one's socket and files. Run as any other user,
// PostgreSQL runs as that user.
export const SERVER_USER = 'plant-store-postgres'
// The throwaway servers of test stores (and DATA_DIR=memory:) run as a user of their own, so that
// none of them, nor a program its superuser makes it run, can reach a DATA_DIR's server or files.
// Test processes run as root share it, and its cache of data folders (cluster-cache.ts): they hold
// test data only, which goes with each process, and root writes in their folders through no link
// (supervisor.ts, run-as.ts).
export const THROWAWAY_USER = 'plant-store-throwaway'

const NOLOGIN_SHELLS = ['/usr/sbin/nologin', '/sbin/nologin', '/bin/false']
const USERADD = ['/usr/sbin/useradd', '/sbin/useradd']
// Several processes may make the user at once; useradd refuses while another holds its lock.
const TRIES = 10

export async function postgresUser(name = SERVER_USER): Promise<OsUser | undefined> {
  if (process.getuid?.() !== 0) return undefined
  let why = 'no useradd on this system'
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const found = await lookUp(name)
    if (found) return found
    const useradd = await firstExisting(USERADD)
    if (useradd === undefined) break
    const shell = (await firstExisting(NOLOGIN_SHELLS)) ?? '/bin/false'
    const made = await runAs(undefined, useradd, [
      '--system',
      '--user-group',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      shell,
      '--comment',
      'plant store embedded PostgreSQL',
      name,
    ])
    why = lastLines(made.stderr) || `useradd exited with ${made.code}`
    if (made.code !== 0) await sleep(50 + 50 * attempt)
  }
  const found = await lookUp(name)
  if (found) return found
  throw new Failure(
    'EMBEDDED_UNAVAILABLE',
    `running as root, which PostgreSQL refuses, and its own user ${name} cannot be made (${why}): make it (useradd --system --user-group --no-create-home --shell /usr/sbin/nologin ${name}), run the service as another user, or set DATABASE_URL`,
  )
}

// `id` asks the system's user database (NSS), not only /etc/passwd.
async function lookUp(name: string): Promise<OsUser | undefined> {
  const [uid, gid] = await Promise.all([idOf('-u', name), idOf('-g', name)])
  return uid === undefined || gid === undefined ? undefined : { name, uid, gid }
}

async function idOf(flag: '-u' | '-g', name: string): Promise<number | undefined> {
  const { code, stdout } = await runAs(undefined, 'id', [flag, name])
  return code === 0 && /^\d+$/.test(stdout.trim()) ? Number(stdout.trim()) : undefined
}

async function firstExisting(paths: string[]): Promise<string | undefined> {
  for (const path of paths) if (await exists(path)) return path
  return undefined
}
