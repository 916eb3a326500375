// A command's durations (`token issue --ttl`, `owners erase --wait`).
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 }

// "90s", "15m", "24h", "7d" → seconds.
export function parseDuration(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,6})([smhd])$/.exec(text)
  if (!match?.[1] || !match[2]) return undefined
  return Number(match[1]) * (UNIT_SECONDS[match[2]] ?? 0)
}
