import { createHash } from 'node:crypto'
import { lstat, mkdir, readdir, readFile, rename, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import process from 'node:process'
import { postgresClient, socketUrl } from '../database/postgres-client.ts'
import { handOver, type OsUser, removeHandedOver, runAs } from '../shared/run-as.ts'
import type { Binaries } from './binaries.ts'
import { ensureCluster, SUPERUSER } from './cluster.ts'
import { makeGuardedFolder } from './folder-guard.ts'
import { serverSettings } from './server-settings.ts'
import { launchPostmaster } from './supervisor.ts'

export const TEMPLATE = 'plant_store_template'
// Changes whenever what makeCachedCluster makes does, so that no older copy is used.
const CACHE_FORMAT = 3

export type ClusterRecipe = {
  binaries: Binaries
  user: OsUser | undefined
  // What goes into the template database once it exists: the migrations (at its URL).
  prepare: (templateUrl: string) => Promise<void>
  // What the template depends on besides the binaries: the folders of the migrations' files and
  // of the code `prepare` runs, so that a change to either makes a new template.
  inputs: string[]
}

// A throwaway server starts from a copy of a data folder made once per machine, user, PostgreSQL
// build and set of migrations: a copy takes a fraction of what initdb and the migrations take
// (docs/testing.md). The copies are kept in a folder of the server user's own in the temporary
// folder, `plant-store-<uid>`, made private and checked before every use: any local user can make
// a folder of that name first, in which case this process makes a data folder of its own instead,
// uncached. A data folder is made aside and renamed into place once complete, so a copy never sees
// half of one; a folder being made goes with this process if it dies first (folder-guard.ts).
export async function copyCachedCluster(target: string, recipe: ClusterRecipe): Promise<void> {
  const cache = await privateFolder(join(tmpdir(), `plant-store-${uidOf(recipe.user)}`), recipe.user)
  if (cache === undefined) {
    await makeCluster(target, dirname(target), recipe)
    return
  }
  const cached = join(cache, `cluster-${await recipeKey(recipe)}`)
  if (!(await isPrivate(cached, recipe.user))) await makeCluster(cached, cache, recipe)
  const { code, stderr } = await runAs(recipe.user, 'cp', ['-Rp', cached, target])
  if (code !== 0) throw new Error(`cannot copy ${cached}: ${stderr.trim()}`)
}

// `destination` once complete, made in a folder of `within`.
async function makeCluster(destination: string, within: string, recipe: ClusterRecipe): Promise<void> {
  const { binaries, user, prepare } = recipe
  const { folder: making, guard } = await makeGuardedFolder(within, 'making-')
  try {
    await handOver(user, making)
    const folder = join(making, 'data')
    // 1 MB WAL segments: the copy carries a segment, which would otherwise be 16 MB of nothing.
    await ensureCluster(folder, { binaries, user, durable: false, walSegmentMb: 1 })
    const server = await launchPostmaster({
      binaries,
      folder,
      user,
      settings: serverSettings({ socketDirectory: making, durable: false }),
      logFile: join(making, 'postgres.log'),
    })
    try {
      const admin = postgresClient(socketUrl(making, SUPERUSER, 'postgres'), { max: 1, onnotice: () => {} })
      // Only the template and the database the admin connects to are ever used: the others would
      // only make each copy larger.
      await admin.unsafe(`create database ${TEMPLATE}`)
      for (const name of ['template0', 'template1']) {
        await admin.unsafe(`alter database ${name} is_template false`)
        await admin.unsafe(`drop database ${name}`)
      }
      await admin.end()
      await prepare(socketUrl(making, SUPERUSER, TEMPLATE))
    } finally {
      await server.stop()
    }
    // Another process may have put the same one in place meanwhile: either serves.
    await rename(folder, destination).catch(() => {})
  } finally {
    await removeHandedOver(user, making)
    guard.release()
  }
}

// `folder`, made when missing, if it is a folder (not a link) of the server's user that no one
// else may enter; undefined when someone else made it first.
async function privateFolder(folder: string, user: OsUser | undefined): Promise<string | undefined> {
  const made = await mkdir(folder, { mode: 0o700 }).then(
    () => true,
    () => false,
  )
  if (made) await handOver(user, folder)
  return (await isPrivate(folder, user)) ? folder : undefined
}

async function isPrivate(folder: string, user: OsUser | undefined): Promise<boolean> {
  const found = await lstat(folder).catch(() => undefined)
  return found?.isDirectory() === true && found.uid === uidOf(user) && (found.mode & 0o077) === 0
}

function uidOf(user: OsUser | undefined): number | undefined {
  return user?.uid ?? process.getuid?.()
}

async function recipeKey({ binaries, user, inputs }: ClusterRecipe): Promise<string> {
  const hash = createHash('sha256')
  const build = await stat(binaries.postgres)
  hash.update(`${CACHE_FORMAT}\n${binaries.postgres}\n${build.size}\n${build.mtimeMs}\n${uidOf(user)}\n`)
  for (const folder of inputs) {
    for (const name of (await readdir(folder, { recursive: true })).sort()) {
      const path = join(folder, name)
      if ((await stat(path)).isFile()) hash.update(name).update(await readFile(path))
    }
  }
  return hash.digest('hex').slice(0, 16)
}
