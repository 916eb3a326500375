import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type postgres from 'postgres'
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

// Each reader's current ETag of a first page (plants/etag.ts: their head, generation 0, limit 20,
// no cursor), one a line in the order of the tokens, for wrk to revalidate with: the file's path.
export async function writeTagsFile(sql: postgres.Sql, readers: Fixture): Promise<string> {
  const heads = await sql<{ owner: string; head: string }[]>`
    select owner, max(position)::text as head from plants group by owner`
  const headOf = new Map(heads.map((row) => [row.owner, row.head]))
  const tagsFile = `${readers.tokensFile}.tags`
  await Bun.write(
    tagsFile,
    `${readers.owners.map((owner) => `"${headOf.get(owner) ?? 0}.0.20.0"`).join('\n')}\n`,
  )
  return tagsFile
}
