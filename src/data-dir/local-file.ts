import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import { chmod, link, mkdir, open, readdir, rename, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { requireOwnSecretFile, secretFileIsLink } from './own-data-dir.ts'
import { unwritableDataDir } from './unwritable-data-dir.ts'

// The files the embedded default makes for itself in DATA_DIR (its token secret, its
// key-encryption keys), readable by the service's user only (mode 0600).

// The text of `name` in `dataDir`, or undefined when there is no such file. A link is not followed,
// and a file another user could have written is refused (data-dir/own-data-dir.ts).
export async function readLocalFile(dataDir: string, name: string): Promise<string | undefined> {
  let handle: Awaited<ReturnType<typeof open>>
  try {
    handle = await open(join(dataDir, name), constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw secretFileIsLink(dataDir, name, error) ?? error
  }
  try {
    await requireOwnSecretFile(dataDir, name, await handle.stat())
    return await handle.readFile('utf8')
  } finally {
    await handle.close()
  }
}

// The steps of a durable write, each a function so that a test can record or stop them.
export type SecretFileSteps = {
  // Makes `path` (a new file, mode 0600) holding `text`.
  write: (path: string, text: string) => Promise<void>
  // Flushes a file, or a folder's entries, to the disk.
  sync: (path: string) => Promise<void>
  // Puts `from` at `to`: `replace` over what is there; otherwise fails with EEXIST when `to` exists.
  place: (from: string, to: string, replace: boolean) => Promise<void>
  remove: (path: string) => Promise<void>
}

export const DISK_STEPS: SecretFileSteps = {
  write: async (path, text) => {
    await writeFile(path, text, { mode: 0o600, flag: 'wx' })
    // The mode given to writeFile is narrowed by the umask only; this sets it whatever the umask.
    await chmod(path, 0o600)
  },
  sync: async (path) => {
    const handle = await open(path, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  },
  place: (from, to, replace) => (replace ? rename(from, to) : link(from, to)),
  remove: (path) => unlink(path),
}

// Writes `text` as `name` in `dataDir` so that a crash or a power loss at any point leaves either
// the file as it was (none, or its old text) or the new text, whole: written to a file of its own,
// synced, put in place, and the folder synced, before the caller wraps anything under a key it
// holds. Without `replace`, an existing file is kept (when two processes start at once, the first
// one's text wins, for both). Returns the text the file holds.
export async function writeSecretFile(
  dataDir: string,
  name: string,
  text: string,
  options: { replace?: boolean; steps?: SecretFileSteps } = {},
): Promise<string> {
  return writeDurably(dataDir, name, text, options).catch((error: unknown) => {
    throw unwritableDataDir(dataDir, error) ?? error
  })
}

async function writeDurably(
  dataDir: string,
  name: string,
  text: string,
  { replace = false, steps = DISK_STEPS }: { replace?: boolean; steps?: SecretFileSteps },
): Promise<string> {
  await mkdir(dataDir, { recursive: true })
  const path = join(dataDir, name)
  const temporary = join(dataDir, `${name}.${randomUUID()}.tmp`)
  await steps.write(temporary, text)
  try {
    await steps.sync(temporary)
    await steps.place(temporary, path, replace)
  } catch (error) {
    await steps.remove(temporary).catch(() => {})
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return (await readLocalFile(dataDir, name)) ?? text
  }
  if (!replace) await steps.remove(temporary)
  await steps.sync(dataDir)
  return text
}

// The copy writeSecretFile writes first: `<name>.<uuid>.tmp`.
const UNPLACED_COPY = /^[\w.-]+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/

// Removes the copies that writes killed before they were put in place left in `dataDir`: each
// holds a secret (a key-encryption key list, perhaps one since retired) that nothing reads. Only
// for the process that holds DATA_DIR, at its start, before it writes any: a copy then is no
// write's in flight. Returns the names removed.
export async function removeUnplacedCopies(dataDir: string, steps: SecretFileSteps = DISK_STEPS) {
  const names = await readdir(dataDir).catch(() => [])
  const unplaced = names.filter((name) => UNPLACED_COPY.test(name))
  for (const name of unplaced) await steps.remove(join(dataDir, name))
  if (unplaced.length > 0) await steps.sync(dataDir)
  return unplaced
}

// Removes `name` from `dataDir` for good: the folder is synced after.
export async function removeSecretFile(
  dataDir: string,
  name: string,
  steps: SecretFileSteps = DISK_STEPS,
): Promise<void> {
  await steps.remove(join(dataDir, name))
  await steps.sync(dataDir)
}
