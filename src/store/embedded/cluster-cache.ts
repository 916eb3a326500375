import { createHash } from 'node:crypto'
import { lstat, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import process from 'node:process'
import { postgresClient, socketUrl } from '../postgres-client.ts'
import type { Binaries } from './binaries.ts'
import { ensureCluster, SUPERUSER } from './cluster.ts'
import { handOver, type OsUser, runAs } from './run-as.ts'
import { serverSettings } from './settings.ts'
import { startPostmaster } from './supervisor.ts'

export const TEMPLATE = 'plant_store_template'
// Changes whenever what makeCachedCluster makes does, so that no older copy is used.
const CACHE_FORMAT = 2

export type ClusterRecipe = {
  binaries: Binaries
  user: OsUser | undefined
  // What goes into the template database once it exists: the migrations (at its URL).
  prepare: (templateUrl: string) => Promise<void>
  // What the template depends on besides the binaries (the migrations' files).
  inputs: string
}

// A throwaway server starts from a copy of a data folder made once per machine, user, PostgreSQL
// build and set of migrations, kept in the temporary folder: a copy takes a fraction of what
// initdb and the migrations take (docs/testing.md). The folder is made aside and
// renamed into place once complete, so a copy never sees half of one; one that is not a folder
// of the server's user, readable by it alone, is not trusted and a new one is made instead.
export async function copyCachedCluster(target: string, recipe: ClusterRecipe): Promise<void> {
  const cached = join(tmpdir(), `plant-store-cluster-${await recipeKey(recipe)}`)
  if (!(await isOwnFolder(cached, recipe.user))) await makeCachedCluster(cached, recipe)
  const { code, stderr } = await runAs(recipe.user, 'cp', ['-Rp', cached, target])
  if (code !== 0) throw new Error(`cannot copy ${cached}: ${stderr.trim()}`)
}

async function makeCachedCluster(cached: string, { binaries, user, prepare }: ClusterRecipe): Promise<void> {
  const making = await mkdtemp(join(tmpdir(), 'plant-store-making-'))
  await handOver(user, making)
  const folder = join(making, 'data')
  try {
    // 1 MB WAL segments: the copy carries a segment, which would otherwise be 16 MB of nothing.
    await ensureCluster(folder, { binaries, user, durable: false, walSegmentMb: 1 })
    const server = await startPostmaster({
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
    await rename(folder, cached).catch(() => {})
  } finally {
    await rm(making, { recursive: true, force: true })
  }
}

async function isOwnFolder(folder: string, user: OsUser | undefined): Promise<boolean> {
  const found = await lstat(folder).catch(() => undefined)
  const uid = user?.uid ?? process.getuid?.()
  return found?.isDirectory() === true && found.uid === uid && (found.mode & 0o077) === 0
}

async function recipeKey({ binaries, user, inputs }: ClusterRecipe): Promise<string> {
  const hash = createHash('sha256')
  const build = await stat(binaries.postgres)
  hash.update(
    `${CACHE_FORMAT}\n${binaries.postgres}\n${build.size}\n${build.mtimeMs}\n${user?.uid ?? process.getuid?.()}\n`,
  )
  for (const name of (await readdir(inputs, { recursive: true })).sort()) {
    const path = join(inputs, name)
    if ((await stat(path)).isFile()) hash.update(name).update(await readFile(path))
  }
  return hash.digest('hex').slice(0, 16)
}
