// A cursor names the position where the next page starts. Opaque to clients; versioned so its
// encoding can change without breaking links already handed out.
const PREFIX = 'p1.'

export function encodeCursor(position: bigint): string {
  return btoa(PREFIX + position.toString())
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '')
}

export function decodeCursor(cursor: string): bigint | undefined {
  let decoded: string
  try {
    decoded = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'))
  } catch {
    return undefined
  }
  if (!decoded.startsWith(PREFIX)) return undefined
  const digits = decoded.slice(PREFIX.length)
  if (!/^[1-9][0-9]{0,18}$/.test(digits)) return undefined
  const position = BigInt(digits)
  return position <= 2n ** 63n - 1n ? position : undefined
}

// The RFC 8288 link to the page after one that ended before `next`, for a listing with a limit.
export function nextPageLink(limit: number | undefined, next: bigint | undefined): string | undefined {
  if (limit === undefined || limit === 0 || next === undefined) return undefined
  return `</plants?limit=${limit}&after=${encodeCursor(next)}>; rel="next"`
}
