import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import { chmod, link, open, readdir, rename, unlink, writeFile } from 'node:fs/promises'
import type { CheckedFolder } from './own-data-dir.ts'
import { requireOwnSecretFile, secretFileIsLink } from './own-file.ts'

// The files the embedded default makes for itself in DATA_DIR (its token secret, its
// key-encryption keys), readable by the service's user only (mode 0600), each reached in the
// folder that was checked.

// The text of `name` in `folder`, or undefined when there is no such file. A link is not followed,
// and a file another user could have written is refused (data-dir/own-data-dir.ts).
export async function readLocalFile(folder: CheckedFolder, name: string): Promise<string | undefined> {
  let handle: Awaited<ReturnType<typeof open>>
  try {
    handle = await open(folder.at(name), constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw secretFileIsLink(folder.path, name, error) ?? error
  }
  try {
    await requireOwnSecretFile(folder.path, name, await handle.stat())
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

export type SecretFileOptions = { replace?: boolean; steps?: SecretFileSteps }

// Writes `text` as `name` in `folder` so that a crash or a power loss at any point leaves either
// the file as it was (none, or its old text) or the new text, whole: written to a file of its own,
// synced, put in place, and the folder synced, before the caller wraps anything under a key it
// holds. Without `replace`, an existing file is kept (when two processes start at once, the first
// one's text wins, for both). Returns the text the file holds.
export async function writeSecretFile(
  folder: CheckedFolder,
  name: string,
  text: string,
  { replace = false, steps = DISK_STEPS }: SecretFileOptions = {},
): Promise<string> {
  const path = folder.at(name)
  const temporary = folder.at(`${name}.${randomUUID()}.tmp`)
  await steps.write(temporary, text)
  try {
    await steps.sync(temporary)
    await steps.place(temporary, path, replace)
  } catch (error) {
    await steps.remove(temporary).catch(() => {})
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return (await readLocalFile(folder, name)) ?? text
  }
  if (!replace) await steps.remove(temporary)
  await steps.sync(folder.at('.'))
  return text
}

// The copy writeSecretFile writes first: `<name>.<uuid>.tmp`.
const UNPLACED_COPY = /^[\w.-]+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/

// Removes the copies that writes killed before they were put in place left in `folder`: each
// holds a secret (a key-encryption key list, perhaps one since retired) that nothing reads. Only
// for the process that holds DATA_DIR, at its start, before it writes any: a copy then is no
// write's in flight. Returns the names removed.
export async function removeUnplacedCopies(folder: CheckedFolder, steps: SecretFileSteps = DISK_STEPS) {
  const names = await readdir(folder.at('.')).catch(() => [])
  const unplaced = names.filter((name) => UNPLACED_COPY.test(name))
  for (const name of unplaced) await steps.remove(folder.at(name))
  if (unplaced.length > 0) await steps.sync(folder.at('.'))
  return unplaced
}

// Removes `name` from `folder` for good: the folder is synced after.
export async function removeSecretFile(
  folder: CheckedFolder,
  name: string,
  steps: SecretFileSteps = DISK_STEPS,
): Promise<void> {
  await steps.remove(folder.at(name))
  await steps.sync(folder.at('.'))
}
