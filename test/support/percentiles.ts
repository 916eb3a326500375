export function median(values: number[]): number {
  return percentile(values, 0.5)
}

// The value below which `fraction` of the values lie (nearest rank); NaN for none, which no limit
// passes.
export function percentile(values: number[], fraction: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = values.toSorted((a, b) => a - b)
  const rank = Math.ceil(sorted.length * fraction) - 1
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] as number
}
