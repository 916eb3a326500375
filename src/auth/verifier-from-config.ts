import type { Config } from '../config.ts'
import { loadOrCreateLocalSecret } from './local-secret.ts'
import { createRemoteKeySet } from './remote-key-set.ts'
import { createTokenVerifier, type TokenVerifier } from './token-verifier.ts'

export async function verifierFromConfig({ auth, dataDir }: Config): Promise<TokenVerifier> {
  return createTokenVerifier({
    secret: auth.useLocalSecret ? await loadOrCreateLocalSecret(dataDir) : auth.secret,
    keySet: auth.jwksUrl
      ? createRemoteKeySet({
          url: new URL(auth.jwksUrl),
          cooldownMs: auth.jwksCooldownMs,
          cacheMaxAgeMs: auth.jwksCacheMaxAgeMs,
        })
      : undefined,
    issuer: auth.issuer,
    audience: auth.audience,
  })
}
