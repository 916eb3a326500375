import { Buffer } from 'node:buffer'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const SECRET_FILE = 'auth-secret'

// The embedded default needs no auth settings: a random HS256 secret is made on first start and
// kept beside the data (mode 0600), so `cli token issue` can sign with the same secret.
export async function loadOrCreateLocalSecret(dataDir: string): Promise<Uint8Array> {
  const existing = await readLocalSecret(dataDir)
  if (existing) return existing
  await mkdir(dataDir, { recursive: true })
  const path = join(dataDir, SECRET_FILE)
  const secret = crypto.getRandomValues(new Uint8Array(32))
  try {
    await writeFile(path, `${Buffer.from(secret).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    // Another process wrote it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return (await readLocalSecret(dataDir)) ?? secret
    throw error
  }
  await chmod(path, 0o600)
  return secret
}

export async function readLocalSecret(dataDir: string): Promise<Uint8Array | undefined> {
  try {
    const text = await readFile(join(dataDir, SECRET_FILE), 'utf8')
    return new Uint8Array(Buffer.from(text.trim(), 'base64url'))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}
