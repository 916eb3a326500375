import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { postgresClient, socketUrl } from '../database/postgres-client.ts'
import { Failure } from '../shared/errors.ts'
import { checkReach, handOver, removeHandedOver } from '../shared/run-as.ts'
import { postgresBinaries } from './binaries.ts'
import { SUPERUSER } from './cluster.ts'
import { copyCachedCluster, TEMPLATE } from './cluster-cache.ts'
import { makeGuardedFolder } from './folder-guard.ts'
import { removeLeftFolders } from './left-folders.ts'
import { serverProcessIds } from './process-ids.ts'
import { serverSettings } from './server-settings.ts'
import { postgresUser, THROWAWAY_USER } from './server-user.ts'
import { launchPostmaster, type Postmaster } from './supervisor.ts'

export type ThrowawayDatabase = { url: string; drop: () => Promise<void> }

export type ThrowawayServer = {
  // A new, empty database: a copy of the migrated template.
  createDatabase: () => Promise<ThrowawayDatabase>
  processIds: () => Promise<number[]>
}

export type TemplateRecipe = {
  // Migrates the template database at its URL.
  prepare: (templateUrl: string) => Promise<void>
  // The folder of what `prepare` applies (the migrations), which a cached template depends on.
  inputs: string[]
  // The most connections a store's pool opens.
  poolSize: number
}

// The throwaway server's folder in the temporary folder: this and random characters.
const FOLDER_PREFIX = 'plant-store-memory-'

// How many stores one process holds open at once: the server admits that many pools at their
// fullest (docs/testing.md gives what the connections cost).
export const MAX_OPEN_STORES = 100

// The one module-level singleton of the service, on purpose: a test process (and a service on
// DATA_DIR=memory:) gets one PostgreSQL server, however many stores it opens, because a server
// takes a few hundred milliseconds to make and start and a store, a database copied from the
// migrated template, a few dozen. The server lives in a temporary folder, without durability
// (settings.ts), and goes with its process: the watchdog stops it and removes the folder once the
// process has ended, however it ended; before the watchdog runs, a guard removes it.
let shared: Promise<ThrowawayServer> | undefined

export function throwawayServer(recipe: TemplateRecipe): Promise<ThrowawayServer> {
  shared ??= startThrowawayServer(recipe).catch((error: unknown) => {
    shared = undefined
    throw error
  })
  return shared
}

async function startThrowawayServer({ prepare, inputs, poolSize }: TemplateRecipe): Promise<ThrowawayServer> {
  const binaries = await postgresBinaries()
  const user = await postgresUser(THROWAWAY_USER)
  // What earlier processes left that nothing of theirs could remove, cleared while this server
  // starts. Best effort: folders that cannot be looked at or removed here (Deno without
  // --allow-read=/proc, say) are left as they were, and never keep a store from opening.
  const clearing = removeLeftFolders(tmpdir(), FOLDER_PREFIX, user).catch(() => {})
  const { folder: root, guard } = await makeGuardedFolder(tmpdir(), FOLDER_PREFIX)
  let server: Postmaster
  try {
    await handOver(user, root)
    await checkReach(user, root, `the temporary folder ${root}`)
    const folder = join(root, 'data')
    await copyCachedCluster(folder, { binaries, user, prepare, inputs })
    server = await launchPostmaster({
      binaries,
      folder,
      user,
      settings: serverSettings({
        socketDirectory: root,
        durable: false,
        // Its pools, and the connection that makes and drops the stores.
        maxConnections: MAX_OPEN_STORES * poolSize + 1,
      }),
      logFile: join(root, 'postgres.log'),
      removeAfter: root,
    })
  } catch (error) {
    await removeHandedOver(user, root)
    throw error
  } finally {
    guard.release()
    await clearing
  }
  // Connected only while used: an idle connection would keep a test process from ending.
  const admin = postgresClient(socketUrl(root, SUPERUSER, 'postgres'), {
    max: 1,
    idle_timeout: 0.1,
    onnotice: () => {},
  })
  let created = 0
  let open = 0
  return {
    processIds: () => serverProcessIds(server.pid),
    createDatabase: async () => {
      if (open >= MAX_OPEN_STORES) {
        throw new Failure(
          'EMBEDDED_UNAVAILABLE',
          `a process holds at most ${MAX_OPEN_STORES} stores open at once, on its one PostgreSQL server: close() the stores a test is done with`,
        )
      }
      open++
      const name = `store_${++created}`
      try {
        // FILE_COPY copies the template's files; WAL_LOG, the default, writes them through the
        // WAL, slower by a store (docs/testing.md has the figures).
        await admin.unsafe(`create database ${name} template ${TEMPLATE} strategy file_copy`)
      } catch (error) {
        open--
        throw error
      }
      let dropped = false
      return {
        url: socketUrl(root, SUPERUSER, name),
        drop: async () => {
          await admin.unsafe(`drop database if exists ${name} with (force)`)
          if (!dropped) open--
          dropped = true
        },
      }
    },
  }
}
