import { access, lstat, mkdir, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { Failure } from '../shared/errors.ts'
import { handOver, type OsUser, removeHandedOver, runAs } from '../shared/run-as.ts'
import type { Binaries } from './binaries.ts'

export const SUPERUSER = 'postgres'

// Makes PostgreSQL's data folder when it has none yet. initdb writes into a folder beside it that is
// renamed into place once complete, so a start killed during initdb leaves no half-made folder
// (initdb refuses a folder that is not empty): the next start makes it again. UTF-8 with the C
// locale: the service orders by positions and compares text byte for byte.
export async function ensureCluster(
  folder: string,
  {
    binaries,
    user,
    durable,
    walSegmentMb,
  }: { binaries: Binaries; user: OsUser | undefined; durable: boolean; walSegmentMb?: number },
): Promise<void> {
  if (await exists(join(folder, 'PG_VERSION'))) return
  const making = `${folder}.initdb`
  await removeHandedOver(user, making)
  await mkdir(making, { mode: 0o700 })
  await handOver(user, making)
  const args = ['-D', making, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C']
  // A throwaway store is gone with its process: nothing of it needs to reach the disk.
  if (!durable) args.push('--no-sync')
  if (walSegmentMb !== undefined) args.push(`--wal-segsize=${walSegmentMb}`)
  const { code, stderr } = await runAs(user, binaries.initdb, [...args, '--no-instructions'])
  if (code !== 0) {
    await removeHandedOver(user, making)
    throw new Failure('EMBEDDED_UNAVAILABLE', `initdb failed for ${folder}: ${lastLines(stderr)}`)
  }
  await rename(making, folder).catch((error: unknown) => {
    throw new Failure(
      'EMBEDDED_UNAVAILABLE',
      `${folder} exists but holds no PostgreSQL data: move it away (${(error as Error).message})`,
    )
  })
}

// As root, a data folder that another user owns (earlier versions ran PostgreSQL as the
// distribution's `postgres` user) is handed, whole, to the user PostgreSQL runs as now, which
// PostgreSQL requires of its folder. Symbolic links inside are changed, never followed.
export async function ownDataFolder(folder: string, user: OsUser | undefined): Promise<void> {
  const found = await lstat(folder).catch(() => undefined)
  if (!user || !found?.isDirectory() || found.uid === user.uid) return
  const { code, stderr } = await runAs(undefined, 'chown', ['-R', '-P', `${user.uid}:${user.gid}`, folder])
  if (code !== 0) {
    throw new Failure(
      'EMBEDDED_UNAVAILABLE',
      `${folder} belongs to another user and cannot be given to ${user.name}: ${lastLines(stderr)}`,
    )
  }
}

export async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

// The end of a program's error output, on one line.
export function lastLines(text: string, count = 3): string {
  return text.trim().split('\n').slice(-count).join(' ').replace(/\s+/g, ' ')
}
