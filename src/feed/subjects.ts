// Every event goes to `<prefix>.events.<type>`; a consumer subscribes to `<prefix>.events.>`.
export function feedSubject(prefix: string, type: string): string {
  return `${prefix}.events.${type}`
}

export function feedFilter(prefix: string): string {
  return `${prefix}.events.>`
}

// Whether the stream subject `pattern` captures every subject that `wanted` matches, token by
// token: `>` takes one or more remaining tokens, `*` exactly one.
export function subjectCovers(pattern: string, wanted: string): boolean {
  const have = pattern.split('.')
  const need = wanted.split('.')
  for (const [index, token] of have.entries()) {
    const other = need[index]
    if (other === undefined) return false
    if (token === '>') return true
    if (other === '>') return false
    if (token !== '*' && token !== other) return false
  }
  return have.length === need.length
}
