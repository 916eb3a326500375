import { mkdir, rmdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { handOver, type OsUser, removeHandedOver } from '../shared/run-as.ts'
import { type FolderGuard, makeGuardedFolder } from './folder-guard.ts'

// A Unix socket's path must fit in sockaddr_un (108 bytes on Linux, 104 on macOS, with its NUL).
const SOCKET_PATH_LIMIT = 103
const SOCKET_NAME = '.s.PGSQL.5432'

// Where the server's socket goes: `preferred` (a folder of DATA_DIR), or a short folder of the
// system's temporary folder when that path would be too long for a socket, or when `preferred`
// cannot be cleared. Either is made anew, of mode 0700 and owned by the server's user: only the
// service (and root) can connect. Whatever a dead server left there (its socket and lock file)
// goes with it.
export async function makeSocketDirectory(
  preferred: string,
  user: OsUser | undefined,
): Promise<SocketDirectory> {
  const fits = Buffer.byteLength(join(preferred, SOCKET_NAME)) <= SOCKET_PATH_LIMIT
  if (fits && (await cleared(preferred, user))) {
    await mkdir(preferred, { mode: 0o700 })
    await handOver(user, preferred)
    return { directory: preferred }
  }
  const { folder, guard } = await makeGuardedFolder(tmpdir(), 'plant-store-')
  await handOver(user, folder)
  return { directory: folder, temporary: guard }
}

// `temporary`: a folder of the temporary folder, removed if this process ends before the server's
// watchdog, told to remove it once the server has stopped, looks after it.
export type SocketDirectory = { directory: string; temporary?: FolderGuard }

// A start as root leaves the folder the server user's, mode 0700: its owner's next start, not
// root, cannot look inside, but can remove it while it is empty.
async function cleared(folder: string, user: OsUser | undefined): Promise<boolean> {
  try {
    await removeHandedOver(user, folder)
    return true
  } catch {
    return rmdir(folder).then(
      () => true,
      () => false,
    )
  }
}
