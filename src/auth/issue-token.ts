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
