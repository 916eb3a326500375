import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose'

export type Algorithm = 'RS256' | 'ES256' | 'EdDSA'

export type SigningKey = { kid: string; alg: Algorithm; privateKey: CryptoKey; publicJwk: JWK }

export type TokenClaims = { subject?: string; issuer?: string; audience?: string; ttlSeconds?: number }

export async function createSigningKey(
  alg: Algorithm,
  kid: string = crypto.randomUUID(),
): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  })
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } }
}

export function signToken(key: SigningKey, claims: TokenClaims = {}, kid = key.kid): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const token = new SignJWT({})
    .setProtectedHeader({ alg: key.alg, kid, typ: 'JWT' })
    .setSubject(claims.subject ?? 'alice')
    .setIssuedAt(now)
    .setExpirationTime(now + (claims.ttlSeconds ?? 300))
  if (claims.issuer) token.setIssuer(claims.issuer)
  if (claims.audience) token.setAudience(claims.audience)
  return token.sign(key.privateKey)
}

// A real JWKS endpoint on 127.0.0.1 whose keys the test rotates and whose fetches it counts.
export function startIdentityProvider(initialKeys: SigningKey[]) {
  let keys = initialKeys
  let failing = false
  let fetches = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: () => {
      fetches++
      if (failing) return new Response('down', { status: 500 })
      return Response.json({ keys: keys.map((key) => key.publicJwk) })
    },
  })
  return {
    jwksUrl: `http://127.0.0.1:${server.port}/.well-known/jwks.json`,
    fetchCount: () => fetches,
    publish: (next: SigningKey[]) => {
      keys = next
    },
    setFailing: (value: boolean) => {
      failing = value
    },
    stop: () => server.stop(true),
  }
}

export type IdentityProvider = ReturnType<typeof startIdentityProvider>
