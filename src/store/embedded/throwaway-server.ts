import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { postgresClient, socketUrl } from '../postgres-client.ts'
import { postgresBinaries } from './binaries.ts'
import { ensureCluster, SUPERUSER } from './cluster.ts'
import { serverProcessIds } from './process-ids.ts'
import { checkReach, handOver, postgresUser } from './run-as.ts'
import { serverSettings } from './settings.ts'
import { startPostmaster } from './supervisor.ts'

const TEMPLATE = 'plant_store_template'

export type ThrowawayDatabase = { url: string; drop: () => Promise<void> }

export type ThrowawayServer = {
  // A new database, a copy of the template (migrated once, by `prepare`, on first use).
  createDatabase: () => Promise<ThrowawayDatabase>
  processIds: () => Promise<number[]>
}

// The one module-level singleton of the service, on purpose: a test process (and a service on
// DATA_DIR=memory:) gets one PostgreSQL server, however many stores it opens, because a server
// takes a few hundred milliseconds to make and start and a store, a database copied from a
// migrated template, a few dozen. The server lives in a temporary folder, without durability
// (settings.ts), and goes with its process: the watchdog stops it and removes the folder once the
// process has ended, however it ended.
let shared: Promise<ThrowawayServer> | undefined

export function throwawayServer(prepare: (templateUrl: string) => Promise<void>): Promise<ThrowawayServer> {
  shared ??= startThrowawayServer(prepare).catch((error: unknown) => {
    shared = undefined
    throw error
  })
  return shared
}

async function startThrowawayServer(
  prepare: (templateUrl: string) => Promise<void>,
): Promise<ThrowawayServer> {
  const binaries = await postgresBinaries()
  const user = await postgresUser()
  const root = await mkdtemp(join(tmpdir(), 'plant-store-memory-'))
  await handOver(user, root)
  await checkReach(user, root, `the temporary folder ${root}`)
  const folder = join(root, 'data')
  await ensureCluster(folder, { binaries, user, durable: false })
  const server = await startPostmaster({
    binaries,
    folder,
    user,
    settings: serverSettings({ socketDirectory: root, durable: false }),
    logFile: join(root, 'postgres.log'),
    removeAfter: root,
  })
  const admin = postgresClient(socketUrl(root, SUPERUSER, 'postgres'), {
    max: 1,
    idle_timeout: 0.1,
    onnotice: () => {},
  })
  await admin.unsafe(`create database ${TEMPLATE}`)
  await prepare(socketUrl(root, SUPERUSER, TEMPLATE))
  let created = 0
  return {
    processIds: () => serverProcessIds(server.pid),
    createDatabase: async () => {
      const name = `store_${++created}_${Math.random().toString(36).slice(2, 8)}`
      await admin.unsafe(`create database ${name} template ${TEMPLATE} strategy file_copy`)
      return {
        url: socketUrl(root, SUPERUSER, name),
        drop: async () => {
          await admin.unsafe(`drop database if exists ${name} with (force)`)
        },
      }
    },
  }
}
