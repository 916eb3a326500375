import { Buffer } from 'node:buffer'
import { type DataDir, withDataDir } from '../data-dir/data-dir.ts'

const SECRET_FILE = 'auth-secret'

// The embedded default needs no auth settings: a random HS256 secret is made on first start and
// kept beside the data (mode 0600, written durably), so `cli token issue` can sign with the same
// secret. Only from a DATA_DIR of this user's own (data-dir/own-data-dir.ts): another user's could
// hold a secret they know.
export async function loadOrCreateLocalSecret(dataDir: string): Promise<Uint8Array> {
  return withDataDir(dataDir, async (folder) => {
    const existing = await secretIn(folder)
    if (existing) return existing
    const made = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
    return secretOf(await folder.writeSecret(SECRET_FILE, `${made}\n`))
  })
}

export async function readLocalSecret(dataDir: string): Promise<Uint8Array | undefined> {
  return withDataDir(dataDir, secretIn)
}

async function secretIn(dataDir: DataDir): Promise<Uint8Array | undefined> {
  const text = await dataDir.readSecret(SECRET_FILE)
  return text === undefined ? undefined : secretOf(text)
}

function secretOf(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text.trim(), 'base64url'))
}
