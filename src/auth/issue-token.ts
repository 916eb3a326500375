import { SignJWT } from 'jose'

export type TokenRequest = { subject: string; ttlSeconds: number; now: Date }

export async function issueToken(
  secret: Uint8Array,
  { subject, ttlSeconds, now }: TokenRequest,
): Promise<string> {
  const issuedAt = Math.floor(now.getTime() / 1000)
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(subject)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + ttlSeconds)
    .sign(secret)
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 }

// "90s", "15m", "24h", "7d" → seconds.
export function parseDuration(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,6})([smhd])$/.exec(text)
  if (!match?.[1] || !match[2]) return undefined
  return Number(match[1]) * (UNIT_SECONDS[match[2]] ?? 0)
}
