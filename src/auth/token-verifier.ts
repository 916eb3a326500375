import {
  type CompactJWSHeaderParameters,
  decodeProtectedHeader,
  errors,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose'
import { isOwner } from '../domain/plant.ts'
import { Failure, isFailure } from '../shared/errors.ts'

// `expiresAt`: the token's `exp`, in milliseconds since the epoch.
export type Identity = { subject: string; expiresAt: number }

export type TokenVerifier = (token: string) => Promise<Identity>

export type VerifierSettings = {
  // HS256 secret; at least 32 bytes.
  secret?: Uint8Array
  // Asymmetric key set (a later addition: AUTH_JWKS_URL); when set alone, HS256 is refused.
  keySet?: JWTVerifyGetKey
  issuer?: string
  audience?: string
  clockToleranceSeconds?: number
  // How many verified tokens are remembered (0: none), and the clock their expiry is read against.
  cacheSize?: number
  now?: () => number
}

const ASYMMETRIC_ALGORITHMS = ['RS256', 'ES256', 'EdDSA']
const HMAC = { name: 'HMAC', hash: 'SHA-256' }

export function createTokenVerifier(settings: VerifierSettings): TokenVerifier {
  const { secret, keySet, issuer, audience, clockToleranceSeconds = 30, cacheSize, now = Date.now } = settings
  if (!secret && !keySet) throw new Error('a token verifier needs a secret or a key set')
  // jose checks `alg` against this list before it asks for a key, so `none` never passes and
  // HS256 is refused when only a key set is configured (no algorithm confusion).
  const algorithms = [...(secret ? ['HS256'] : []), ...(keySet ? ASYMMETRIC_ALGORITHMS : [])]
  // Imported once: jose would import a raw secret again on every verification.
  const hmacKey = secret && crypto.subtle.importKey('raw', new Uint8Array(secret), HMAC, false, ['verify'])
  const getKey: JWTVerifyGetKey = (header, token) =>
    header.alg === 'HS256' && hmacKey ? hmacKey : (keySet as JWTVerifyGetKey)(header, token)
  const options = {
    algorithms,
    issuer,
    audience,
    clockTolerance: Math.min(clockToleranceSeconds, 30),
    requiredClaims: ['exp', 'sub'],
  }
  const verified = verifiedTokens<unknown>({ maxEntries: cacheSize, now })
  // The secret does not change while the process runs: a token it verified stays verified until it
  // expires, without reading its header again. A key set's key is current only while it hands it out.
  const isCurrent = async (token: string, key: unknown) =>
    (hmacKey !== undefined && key === (await hmacKey)) || (await currentKey(getKey, token)) === key
  return async (token) => {
    const remembered = await verified.find(token, (key) => isCurrent(token, key))
    if (remembered !== undefined) return { subject: remembered.subject, expiresAt: remembered.expiresAtMs }
    const at = { ...options, currentDate: new Date(now()) }
    const { payload, key } = await jwtVerify(token, getKey, at).catch((error: unknown) => {
      throw new Failure('TOKEN_REJECTED', describe(error))
    })
    const { sub: subject, exp } = payload
    if (!isOwner(subject)) {
      throw new Failure(
        'TOKEN_REJECTED',
        'the token subject (sub) must be 1 to 255 characters, well-formed Unicode without U+0000',
      )
    }
    const expiresAt = (exp ?? 0) * 1000
    verified.remember(token, { subject, expiresAtMs: expiresAt, key })
    return { subject, expiresAt }
  }
}

// The key the key source hands out for this token now, if any.
async function currentKey(getKey: JWTVerifyGetKey, token: string): Promise<unknown> {
  const [header = '', payload = '', signature = ''] = token.split('.')
  try {
    const parameters = decodeProtectedHeader(token) as CompactJWSHeaderParameters
    return await getKey(parameters, { protected: header, payload, signature })
  } catch {
    return undefined
  }
}

const CLAIM_PROBLEMS: Record<string, string> = {
  aud: 'the token is for another audience',
  iss: 'the token is from another issuer',
  nbf: 'the token is not valid yet',
  exp: 'the token has no expiry (exp)',
  sub: 'the token has no subject (sub)',
}

function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired'
  if (error instanceof errors.JWTClaimValidationFailed) {
    return CLAIM_PROBLEMS[error.claim] ?? `the token claim ${error.claim} is invalid`
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'the token signature is invalid'
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the token algorithm is not accepted'
  if (error instanceof errors.JWKSNoMatchingKey) return 'no key matches the token'
  if (isFailure(error, 'KEY_SET_UNAVAILABLE') || error instanceof errors.JWKSTimeout) {
    return "the identity provider's key set is unavailable"
  }
  return 'the token is malformed'
}

// A bounded memory of tokens that passed verification, so that a caller's next requests skip the
// signature check. An entry is trusted only until the token's `exp`, and only while the key that
// verified it is still the one the key source hands out for that token (`isCurrent`): a rotated
// or refetched key set sends the token through full verification again. When full, the oldest
// entry makes room.
export type VerifiedToken<Key> = { subject: string; expiresAtMs: number; key: Key }

export function verifiedTokens<Key>({ maxEntries = 10_000, now = Date.now } = {}) {
  const entries = new Map<string, VerifiedToken<Key>>()
  return {
    find: async (token: string, isCurrent: (key: Key) => Promise<boolean>) => {
      const entry = entries.get(token)
      if (!entry) return undefined
      if (now() < entry.expiresAtMs && (await isCurrent(entry.key))) return entry
      entries.delete(token)
      return undefined
    },
    remember: (token: string, verified: VerifiedToken<Key>) => {
      if (maxEntries <= 0) return
      entries.delete(token)
      if (entries.size >= maxEntries) {
        const oldest = entries.keys().next().value
        if (oldest !== undefined) entries.delete(oldest)
      }
      entries.set(token, verified)
    },
  }
}
