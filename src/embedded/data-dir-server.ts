import { mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { DataDir } from '../data-dir/data-dir.ts'
import type { Unlock } from '../data-dir/data-dir-lock.ts'
import { socketUrl } from '../database/postgres-client.ts'
import { checkReach, removeHandedOver } from '../shared/run-as.ts'
import { postgresBinaries } from './binaries.ts'
import { ensureCluster, ownDataFolder, SUPERUSER } from './cluster.ts'
import { runningPostmaster, stopLeftover } from './postmaster.ts'
import { serverProcessIds } from './process-ids.ts'
import { serverSettings } from './server-settings.ts'
import { postgresUser } from './server-user.ts'
import { makeSocketDirectory } from './socket-directory.ts'
import { launchPostmaster, type Postmaster, type PostmasterOptions } from './supervisor.ts'

// DATA_DIR's layout: the generated token secret (auth/local-secret.ts) and the lock stay at its
// top; PostgreSQL's data folder, its socket folder and its log sit beside them.
export const POSTGRES_FOLDER = 'postgres'
const SOCKET_FOLDER = 'socket'
const LOG_FILE = 'postgres.log'
const DATABASE = 'postgres'

export type EmbeddedServer = {
  url: string
  // The server's processes (the postmaster first), for a gauge of its memory.
  processIds: () => Promise<number[]>
  // Whether this process started the server (and holds DATA_DIR), or works beside a service.
  own: boolean
  // Resolves with what happened if the server this process started ends before close().
  lost?: Promise<string | undefined>
  close: () => Promise<void>
}

// How long a command beside a service waits for that service's server to accept connections (it
// may be starting).
const BESIDE_WAIT_MS = 30_000

// The PostgreSQL server of a DATA_DIR. A service starts it and holds DATA_DIR while it runs; a
// second service is refused. A command of the CLI (`beside`) starts one for its run when no
// service holds DATA_DIR, and otherwise works beside the service, on its server's socket, as
// commands work beside a service on any PostgreSQL. The server is given DATA_DIR's paths by name
// (it is another process, and another user's when this one is root): that they name the folder
// that was checked is what the check of every folder above DATA_DIR keeps true.
export async function openDataDirServer(dataDir: DataDir, { beside = false } = {}): Promise<EmbeddedServer> {
  if (!beside) return startOwnServer(dataDir.path, await dataDir.lock())
  const folder = join(resolve(dataDir.path), POSTGRES_FOLDER)
  for (const deadline = Date.now() + BESIDE_WAIT_MS; Date.now() < deadline; await sleep(50)) {
    const unlock = await dataDir.tryLock()
    if (unlock) return startOwnServer(dataDir.path, unlock)
    const running = await runningPostmaster(folder)
    if (running?.ready) {
      const pid = running.pid
      return {
        url: socketUrl(running.socketDirectory, SUPERUSER, DATABASE),
        processIds: () => serverProcessIds(pid),
        own: false,
        close: async () => {},
      }
    }
  }
  throw await dataDir.inUse()
}

async function startOwnServer(dataDir: string, unlock: Unlock): Promise<EmbeddedServer> {
  try {
    const root = resolve(dataDir)
    const binaries = await postgresBinaries()
    const user = await postgresUser()
    await checkReach(user, root, `DATA_DIR ${dataDir}`)
    const folder = join(root, POSTGRES_FOLDER)
    await stopLeftover(folder)
    await mkdir(root, { recursive: true })
    await ownDataFolder(folder, user)
    await ensureCluster(folder, { binaries, user, durable: true })
    const preferred = join(root, SOCKET_FOLDER)
    const { directory: socketDirectory, temporary } = await makeSocketDirectory(preferred, user)
    let server: Postmaster
    try {
      server = await startPostmasterOnceFree({
        binaries,
        folder,
        user,
        settings: serverSettings({ socketDirectory, durable: true }),
        logFile: join(root, LOG_FILE),
        removeAfter: temporary ? socketDirectory : undefined,
      })
    } catch (error) {
      if (temporary) await removeHandedOver(user, socketDirectory)
      throw error
    } finally {
      temporary?.release()
    }
    let closing = false
    return {
      url: socketUrl(socketDirectory, SUPERUSER, DATABASE),
      processIds: () => serverProcessIds(server.pid),
      own: true,
      lost: server.exited.then((code) =>
        closing
          ? undefined
          : `the embedded PostgreSQL server stopped (exit ${code}); its log: ${join(root, LOG_FILE)}`,
      ),
      close: async () => {
        closing = true
        await server.stop()
        await unlock()
      },
    }
  } catch (error) {
    await unlock()
    throw error
  }
}

// The children of a postmaster that died (SIGKILL, say) notice its death and exit within moments;
// until they have, they hold its shared memory and PostgreSQL refuses to start. Such a start is
// tried again for a while.
const SHARED_MEMORY_WAIT_MS = 10_000

async function startPostmasterOnceFree(options: PostmasterOptions): Promise<Postmaster> {
  for (const deadline = Date.now() + SHARED_MEMORY_WAIT_MS; ; await sleep(200)) {
    try {
      return await launchPostmaster(options)
    } catch (error) {
      if (
        !(error instanceof Error && error.message.includes('shared memory block')) ||
        Date.now() > deadline
      ) {
        throw error
      }
    }
  }
}
