import { Buffer } from 'node:buffer'
import { chmodSync, mkdtempSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// A fresh DATA_DIR in the temporary folder. mkdtemp makes it 0700; a test run as root runs the
// embedded PostgreSQL as the postgres user, which must enter it (as a DATA_DIR of ./data, made
// 0755 by the service, lets it).
export function makeDataDirSync(prefix: string): string {
  const dataDir = mkdtempSync(join(tmpdir(), prefix))
  chmodSync(dataDir, 0o755)
  return dataDir
}

export async function makeDataDir(prefix: string): Promise<string> {
  return makeDataDirSync(prefix)
}

// The token secret a server run as another user made in `dataDir`, read as the file it is: the
// service itself, rightly, trusts no secret file of another user's (src/data-dir/own-file.ts).
export async function otherUsersSecret(dataDir: string): Promise<Uint8Array> {
  const text = await readFile(join(dataDir, 'auth-secret'), 'utf8')
  return new Uint8Array(Buffer.from(text.trim(), 'base64url'))
}
