import { chmodSync, mkdtempSync } from 'node:fs'
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
