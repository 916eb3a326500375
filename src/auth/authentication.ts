import { Elysia } from 'elysia'
import { Failure, isFailure } from '../shared/errors.ts'
import type { TokenVerifier } from './token-verifier.ts'

const REALM = 'Bearer realm="plants"'

// Resolves the caller's identity from the Authorization header only (never the query string),
// before the body is validated, so anonymous callers learn nothing about the body rules.
export function authentication(verify: TokenVerifier) {
  return new Elysia({ name: 'authentication' }).derive({ as: 'scoped' }, async ({ headers }) => {
    const credentials = readBearerToken(headers.authorization)
    if (credentials.kind === 'missing') {
      throw new Failure('UNAUTHORIZED', 'a bearer token is required', { 'www-authenticate': REALM })
    }
    if (credentials.kind === 'malformed') throw rejected(credentials.reason)
    try {
      const { subject, expiresAt } = await verify(credentials.token)
      return { owner: subject, tokenExpiresAt: expiresAt }
    } catch (error) {
      if (isFailure(error, 'TOKEN_REJECTED')) throw rejected(error.message)
      throw error
    }
  })
}

function rejected(reason: string): Failure {
  return new Failure('UNAUTHORIZED', reason, {
    'www-authenticate': `${REALM}, error="invalid_token", error_description="${reason.replaceAll('"', "'")}"`,
  })
}

export type BearerCredentials =
  | { kind: 'missing' }
  | { kind: 'malformed'; reason: string }
  | { kind: 'token'; token: string }

// RFC 7235: the scheme name is case-insensitive. RFC 6750: the credentials are one token68.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i

// Another scheme, or none, is a missing bearer token; a bearer scheme without one token is malformed.
export function readBearerToken(authorization: string | null | undefined): BearerCredentials {
  const header = authorization?.trim() ?? ''
  if (!/^bearer( |$)/i.test(header)) return { kind: 'missing' }
  const token = BEARER.exec(header)?.[1]
  if (!token) return { kind: 'malformed', reason: 'the Authorization header is not "Bearer <token>"' }
  return { kind: 'token', token }
}
