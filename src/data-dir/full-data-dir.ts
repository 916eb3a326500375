import { statfs } from 'node:fs/promises'
import { diskFull } from '../shared/disk-full.ts'
import { Failure } from '../shared/errors.ts'

// Less room than this when PostgreSQL would not start: it needs more (a WAL segment is 1 MB, and
// its log may have been cut short before it said why).
const TOO_LITTLE_BYTES = 1024 * 1024

// A full DATA_DIR as one line naming it and what to do, however the error surfaced (wrapped by
// drizzle, or in a Failure's message); undefined for any other error.
export function fullDataDir(dataDir: string, error: unknown): Failure | undefined {
  const said = diskFull(error)
  return said === undefined ? undefined : full(dataDir, said, error)
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
