import { statfs } from 'node:fs/promises'
import { Failure } from '../shared/errors.ts'

// What says that the disk under DATA_DIR has no room left: a write of this process (ENOSPC, or
// EDQUOT for the user's quota), PostgreSQL's disk_full (SQLSTATE 53100), or the words its server
// and initdb print when they stop for it.
const FULL_CODES = new Set(['ENOSPC', 'EDQUOT'])
const FULL_SQLSTATE = '53100'
const FULL_WORDS = /no space left on device|disk quota exceeded/i
// Less room than this when PostgreSQL would not start: it needs more (a WAL segment is 1 MB, and
// its log may have been cut short before it said why).
const TOO_LITTLE_BYTES = 1024 * 1024

// A full DATA_DIR as one line naming it and what to do, however the error surfaced (wrapped by
// drizzle, or in a Failure's message); undefined for any other error.
export function fullDataDir(dataDir: string, error: unknown): Failure | undefined {
  for (let at: unknown = error; at instanceof Error; at = at.cause) {
    const { code } = at as { code?: unknown }
    const words = FULL_WORDS.exec(at.message)?.[0]
    if (words !== undefined) return full(dataDir, words, error)
    if (typeof code === 'string' && FULL_CODES.has(code)) return full(dataDir, firstLine(at.message), error)
    if (code === FULL_SQLSTATE) return full(dataDir, `PostgreSQL: ${firstLine(at.message)}`, error)
  }
  return undefined
}

// The same for a PostgreSQL server that would not start, or initdb that failed, without saying
// why: a disk with almost no room left is said to be the cause.
export async function fullDataDirAtStart(dataDir: string, error: unknown): Promise<Failure | undefined> {
  const said = fullDataDir(dataDir, error)
  if (said || !(error instanceof Failure && error.code === 'EMBEDDED_UNAVAILABLE')) return said
  const room = await statfs(dataDir).catch(() => undefined)
  if (room === undefined || room.bavail * room.bsize >= TOO_LITTLE_BYTES) return undefined
  return full(dataDir, `${Math.floor((room.bavail * room.bsize) / 1024)} kB left`, error)
}

function full(dataDir: string, said: string, error: unknown): Failure {
  return new Failure(
    'EMBEDDED_UNAVAILABLE',
    `DATA_DIR ${dataDir} is full (${said}): free space on its file system (df ${dataDir}) or move DATA_DIR to a larger one, then try again`,
    {},
    { cause: error },
  )
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim()
}
