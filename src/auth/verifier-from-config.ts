import { createRemoteJWKSet, customFetch, type FetchImplementation } from 'jose'
import type { Config } from '../config/config.ts'
import { Failure } from '../shared/errors.ts'
import { loadOrCreateLocalSecret } from './local-secret.ts'
import { createTokenVerifier, type TokenVerifier } from './token-verifier.ts'

export async function verifierFromConfig({ auth, dataDir }: Config): Promise<TokenVerifier> {
  return createTokenVerifier({
    secret: auth.useLocalSecret ? await loadOrCreateLocalSecret(dataDir) : auth.secret,
    keySet: auth.jwksUrl
      ? createRemoteJWKSet(new URL(auth.jwksUrl), {
          cooldownDuration: auth.jwksCooldownMs,
          cacheMaxAge: auth.jwksCacheMaxAgeMs,
          [customFetch]: rateLimitedFetch(auth.jwksCooldownMs),
        })
      : undefined,
    issuer: auth.issuer,
    audience: auth.audience,
  })
}

// jose caches the key set, refetches it when a token names an unknown `kid`, and waits
// `cooldownDuration` after a successful fetch before it fetches again. It does not wait after a
// failed fetch, so while the provider is down every request would try again: this fetch refuses to
// go out more than once per cooldown, whatever the outcome of the last attempt.
function rateLimitedFetch(cooldownMs: number): FetchImplementation {
  let lastAttemptAt = Number.NEGATIVE_INFINITY
  return async (resource, options) => {
    if (Date.now() - lastAttemptAt < cooldownMs) {
      throw new Failure(
        'KEY_SET_UNAVAILABLE',
        'the key set was fetched moments ago and cannot be refetched yet',
      )
    }
    lastAttemptAt = Date.now()
    const response = await fetch(resource, options).catch((cause: unknown) => {
      throw new Failure('KEY_SET_UNAVAILABLE', 'the key set could not be fetched', {}, { cause })
    })
    if (response.status !== 200) {
      await response.body?.cancel()
      throw new Failure('KEY_SET_UNAVAILABLE', `the key set could not be fetched (HTTP ${response.status})`)
    }
    return response
  }
}
