import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

// The files the embedded default makes for itself in DATA_DIR on first start (its token secret,
// its key-encryption key), readable by the service's user only (mode 0600).

// The text of `name` in `dataDir`, or undefined when there is no such file.
export async function readLocalFile(dataDir: string, name: string): Promise<string | undefined> {
  try {
    return await readFile(join(dataDir, name), 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

// Writes `text` as `name` unless the file exists, and returns what the file holds: when two
// processes start at once, the first one's text, for both.
export async function createLocalFileOnce(dataDir: string, name: string, text: string): Promise<string> {
  await mkdir(dataDir, { recursive: true })
  const path = join(dataDir, name)
  try {
    await writeFile(path, text, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      return (await readLocalFile(dataDir, name)) ?? text
    throw error
  }
  // The mode given to writeFile is narrowed by the umask only; this sets it whatever the umask.
  await chmod(path, 0o600)
  return text
}
