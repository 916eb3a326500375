export type BearerCredentials =
  | { kind: 'missing' }
  | { kind: 'malformed'; reason: string }
  | { kind: 'token'; token: string }

// RFC 7235: the scheme name is case-insensitive. RFC 6750: the credentials are one token68.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

export function readBearerToken(authorization: string | null | undefined): BearerCredentials {
  if (authorization === null || authorization === undefined || authorization.trim() === '') {
    return { kind: 'missing' }
  }
  const scheme = authorization.trimStart().split(' ', 1)[0] ?? ''
  if (scheme.toLowerCase() !== 'bearer') return { kind: 'missing' }
  const match = BEARER.exec(authorization.trim())
  if (!match?.[1]) return { kind: 'malformed', reason: 'the Authorization header is not "Bearer <token>"' }
  return { kind: 'token', token: match[1] }
}
