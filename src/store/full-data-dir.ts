import { Failure } from '../shared/errors.ts'

// What says that the disk under DATA_DIR has no room left: a write of this process (ENOSPC, or
// EDQUOT for the user's quota), PostgreSQL's disk_full (SQLSTATE 53100), or the words its server
// and initdb print when they stop for it.
const FULL_CODES = new Set(['ENOSPC', 'EDQUOT', '53100'])
const FULL_WORDS = /no space left on device|disk quota exceeded/i

// A full DATA_DIR as one line naming it and what to do, however the error surfaced (wrapped by
// drizzle, or in a Failure's message); undefined for any other error.
export function fullDataDir(dataDir: string, error: unknown): Failure | undefined {
  for (let at: unknown = error; at instanceof Error; at = at.cause) {
    const { code } = at as { code?: unknown }
    if ((typeof code === 'string' && FULL_CODES.has(code)) || FULL_WORDS.test(at.message)) {
      const said = FULL_WORDS.exec(at.message)?.[0] ?? firstLine(at.message)
      return new Failure(
        'EMBEDDED_UNAVAILABLE',
        `DATA_DIR ${dataDir} is full (${said}): free space on its file system (df ${dataDir}) or move DATA_DIR to a larger one, then try again`,
        {},
        { cause: error },
      )
    }
  }
  return undefined
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim()
}
