import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { issueToken } from '../../src/auth/issue-token.ts'

// Owners of a load run: their subjects and tokens (for wrk), one a line.
export type Fixture = { ownersFile: string; tokensFile: string; owners: string[]; tokens: string[] }

const directory = mkdtempSync(join(tmpdir(), 'plant-bench-'))

export async function writeFixture(secret: string, prefix: string, count: number): Promise<Fixture> {
  const key = new TextEncoder().encode(secret)
  const owners = Array.from({ length: count }, (_, index) => `${prefix}-${index}`)
  const tokens = await Promise.all(
    owners.map((subject) => issueToken(key, { subject, ttlSeconds: 6 * 3600, now: new Date() })),
  )
  const ownersFile = join(directory, `${prefix}.owners`)
  const tokensFile = join(directory, `${prefix}.tokens`)
  await Bun.write(ownersFile, `${owners.join('\n')}\n`)
  await Bun.write(tokensFile, `${tokens.join('\n')}\n`)
  return { ownersFile, tokensFile, owners, tokens }
}
