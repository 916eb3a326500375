import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { exportSPKI, SignJWT } from 'jose'
import type { TokenVerifier } from '../../src/auth/token-verifier.ts'
import { verifierFromConfig } from '../../src/auth/verifier-from-config.ts'
import { loadConfig } from '../../src/config/config.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { type TestApp, testApp } from '../support/harness.ts'
import {
  type Algorithm,
  createSigningKey,
  type IdentityProvider,
  type SigningKey,
  signToken,
  startIdentityProvider,
} from '../support/identity-provider.ts'
import { tokenHeader } from '../support/plant-client.ts'

const ISSUER = 'https://id.example.test/'
const AUDIENCE = 'plant-store'
const claims = { issuer: ISSUER, audience: AUDIENCE }

async function verifierFor(provider: IdentityProvider, cooldownMs: number): Promise<TokenVerifier> {
  const config = loadConfig({
    AUTH_JWKS_URL: provider.jwksUrl,
    AUTH_ISSUER: ISSUER,
    AUTH_AUDIENCE: AUDIENCE,
    AUTH_JWKS_COOLDOWN_MS: String(cooldownMs),
  })
  return verifierFromConfig(config)
}

async function rejection(verify: TokenVerifier, token: string): Promise<string> {
  const error = await verify(token).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toMatchObject({ code: 'TOKEN_REJECTED' })
  return (error as Error).message
}

const algorithms: Algorithm[] = ['RS256', 'ES256', 'EdDSA']

describe('AUTH_JWKS_URL with a real key set endpoint', () => {
  let keys: SigningKey[]
  beforeAll(async () => {
    keys = await Promise.all(algorithms.map((alg) => createSigningKey(alg)))
  })

  test.each(algorithms)(
    'given a %s key in the set, when a token signed with it arrives, then its subject is the caller',
    async (alg) => {
      const provider = startIdentityProvider(keys)
      const verify = await verifierFor(provider, 30_000)
      const key = keys.find((candidate) => candidate.alg === alg) as SigningKey
      expect(await verify(await signToken(key, { ...claims, subject: `user-${alg}` }))).toMatchObject({
        subject: `user-${alg}`,
      })
      await provider.stop()
    },
  )

  test('given several tokens, when they are verified, then the key set is fetched once and cached', async () => {
    const provider = startIdentityProvider(keys)
    const verify = await verifierFor(provider, 0)
    for (const key of keys) await verify(await signToken(key, claims))
    for (const key of keys) await verify(await signToken(key, claims))
    expect(provider.fetchCount()).toBe(1)
    await provider.stop()
  })

  test('given AUTH_ISSUER and AUTH_AUDIENCE, when a token names another, then it is refused', async () => {
    const provider = startIdentityProvider(keys)
    const verify = await verifierFor(provider, 30_000)
    const [key] = keys as [SigningKey]
    expect(await rejection(verify, await signToken(key, { ...claims, issuer: 'https://evil.test/' }))).toBe(
      'the token is from another issuer',
    )
    expect(await rejection(verify, await signToken(key, { ...claims, audience: 'other-api' }))).toBe(
      'the token is for another audience',
    )
    expect(await rejection(verify, await signToken(key, { audience: AUDIENCE }))).toBe(
      'the token is from another issuer',
    )
    await provider.stop()
  })

  test('given only a key set, when an HS256 token signed with the public key arrives, then it is refused (no algorithm confusion)', async () => {
    const provider = startIdentityProvider(keys)
    const verify = await verifierFor(provider, 30_000)
    const rsa = keys[0] as SigningKey
    const publicPem = await exportSPKI(
      await crypto.subtle.importKey(
        'jwk',
        rsa.publicJwk,
        { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
        true,
        ['verify'],
      ),
    )
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
      .setSubject('mallory')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(publicPem))
    expect(await rejection(verify, forged)).toBe('the token algorithm is not accepted')
    await provider.stop()
  })

  test('given the provider rotates to a new key, when a token signed with it arrives after the cooldown, then the set is refetched and the token accepted', async () => {
    const [oldKey] = keys as [SigningKey]
    const newKey = await createSigningKey('ES256')
    const provider = startIdentityProvider([oldKey])
    const verify = await verifierFor(provider, 200)
    await verify(await signToken(oldKey, claims))

    provider.publish([newKey])
    await Bun.sleep(250)

    expect(await verify(await signToken(newKey, { ...claims, subject: 'rotated' }))).toMatchObject({
      subject: 'rotated',
    })
    expect(provider.fetchCount()).toBe(2)
    await Bun.sleep(250)
    expect(await rejection(verify, await signToken(oldKey, claims))).toBe('no key matches the token')
    await provider.stop()
  })

  test('given a flood of tokens with unknown kids, when they arrive within the cooldown, then the provider is not asked again', async () => {
    const provider = startIdentityProvider(keys)
    const verify = await verifierFor(provider, 60_000)
    const stranger = await createSigningKey('RS256')
    await verify(await signToken(keys[0] as SigningKey, claims))

    const tokens = await Promise.all(
      Array.from({ length: 50 }, () => signToken(stranger, claims, crypto.randomUUID())),
    )
    const messages = await Promise.all(tokens.map((token) => rejection(verify, token)))

    expect(new Set(messages)).toEqual(new Set(['no key matches the token']))
    expect(provider.fetchCount()).toBe(1)
    await provider.stop()
  })

  test('given the provider is failing, when tokens keep arriving, then it is asked once per cooldown, not once per token', async () => {
    const provider = startIdentityProvider(keys)
    provider.setFailing(true)
    const verify = await verifierFor(provider, 60_000)
    const token = await signToken(keys[0] as SigningKey, claims)

    for (let attempt = 0; attempt < 20; attempt++) {
      expect(await rejection(verify, token)).toBe("the identity provider's key set is unavailable")
    }
    expect(provider.fetchCount()).toBe(1)
    await provider.stop()
  })
})

describe('the HTTP API behind an identity provider', () => {
  let key: SigningKey
  let provider: IdentityProvider
  let app: TestApp['app']
  let close: () => Promise<void>
  beforeAll(async () => {
    key = await createSigningKey('EdDSA')
    provider = startIdentityProvider([key])
    const handle = await openStorage({ kind: 'memory' })
    close = handle.close
    ;({ app } = testApp({
      db: handle.db,
      keyring: handle.keyring,
      verifyToken: await verifierFor(provider, 30_000),
    }))
  })
  afterAll(async () => {
    await close()
    await provider.stop()
  })

  test('given a provider-signed token, when the caller creates and lists plants, then they are its own', async () => {
    const auth = tokenHeader(await signToken(key, { ...claims, subject: 'carol' }))
    const created = await app.handle(
      new Request('http://localhost/plants', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"id": 1, "name": "Fern"}',
      }),
    )
    expect(created.status).toBe(200)
    const listed = await app.handle(new Request('http://localhost/plants', { headers: auth }))
    expect(await listed.json()).toEqual([{ name: 'Fern' }])
  })

  test('given a token with the wrong audience, when it is sent, then the answer is 401 invalid_token', async () => {
    const token = await signToken(key, { issuer: ISSUER, audience: 'someone-else' })
    const response = await app.handle(new Request('http://localhost/plants', { headers: tokenHeader(token) }))
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"')
    const body = (await response.json()) as { error: number; message: string }
    expect(body).toEqual({ error: 401, message: 'the token is for another audience' })
    expect(body.message).not.toContain(token)
  })
})
