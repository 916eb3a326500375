// RFC 9110 §13.1.2: `*` matches any current representation, and the answers this is asked about
// always have one; a list of tags matches when one of them equals the tag under the weak
// comparison (W/ ignored). A malformed field matches nothing, so the caller gets the full answer.
export function matchesIfNoneMatch(field: string, tag: string): boolean {
  if (field.trim() === '*') return true
  for (const [, opaque] of field.matchAll(/(?:W\/)?("[^"]*")/g)) if (opaque === tag) return true
  return false
}
