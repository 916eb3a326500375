import { SETTINGS, type SettingsTable } from './settings.ts'

export type UnknownSetting = { name: string; nearest: string; message: string }

// Variables that look meant for the service but that it does not read: a misspelt DATABASE_URL
// would otherwise start on the embedded store, a misspelt EVENTS_NATS_URL leave the feed off,
// without a word. A variable is suspect when it starts like the service's own (DATABASE_, AUTH_…,
// taken from the table, so a new family brings its prefix) or is a letter or two from a known name
// in any case (`DATABSE_URL`, `database_url`); each is named with the nearest known name.
export function findUnknownSettings(
  env: Record<string, string | undefined>,
  table: SettingsTable = SETTINGS,
): UnknownSetting[] {
  const names = Object.keys(table).filter((name) => !name.endsWith('*'))
  const families = Object.keys(table)
    .filter((name) => name.endsWith('*'))
    .map((name) => name.slice(0, -1))
  const prefixes = [...new Set(names.flatMap((name) => /^[A-Z]+_/.exec(name) ?? []))]
  const found: UnknownSetting[] = []
  for (const name of Object.keys(env).sort()) {
    if (names.includes(name) || families.some((family) => name.startsWith(family))) continue
    const upper = name.toUpperCase()
    const [nearest, distance] = closest(upper, [...names, ...families.map((family) => `${family}*`)])
    const near = distance <= (nearest.length <= 5 ? 1 : 2)
    if (!near && !prefixes.some((prefix) => upper.startsWith(prefix))) continue
    const hint = near ? `did you mean ${nearest}?` : `the nearest known name is ${nearest}`
    found.push({ name, nearest, message: `${name} is not a setting of this service and is ignored; ${hint}` })
  }
  return found
}

function closest(name: string, candidates: string[]): [string, number] {
  let best: [string, number] = ['', Number.POSITIVE_INFINITY]
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate)
    if (distance < best[1]) best = [candidate, distance]
  }
  return best
}

// Optimal string alignment: insertions, deletions, substitutions and swaps of two neighbours each
// count one, so `DATABSE_URL` and `DATBAASE_URL` are both one step from DATABASE_URL. Names are a
// few dozen characters: the quadratic table is nothing next to a start.
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, at(i - 2, j - 2) + 1)
      const row = rows[i]
      if (row) row[j] = best
    }
  }
  return at(a.length, b.length)
}
