// What says that a disk has no room left, wherever it surfaced: a write of this process (ENOSPC,
// or EDQUOT for the user's quota), PostgreSQL's disk_full (SQLSTATE 53100), or the words its server
// and initdb print when they stop for it (in a Failure's message, say). Drizzle wraps the driver's
// error: each cause along the chain is looked at.
const FULL_CODES = new Set(['ENOSPC', 'EDQUOT'])
const FULL_SQLSTATE = '53100'
const FULL_WORDS = /no space left on device|disk quota exceeded/i

// What said so, in one line (PostgreSQL's own words after `PostgreSQL: `); undefined for an error
// that does not say the disk is full.
export function diskFull(error: unknown): string | undefined {
  for (let at: unknown = error; at instanceof Error; at = at.cause) {
    const { code } = at as { code?: unknown }
    const words = FULL_WORDS.exec(at.message)?.[0]
    if (words !== undefined) return words
    if (typeof code === 'string' && FULL_CODES.has(code)) return firstLine(at.message)
    if (code === FULL_SQLSTATE) return `PostgreSQL: ${firstLine(at.message)}`
  }
  return undefined
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim()
}
