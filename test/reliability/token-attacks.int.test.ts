import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  base64url,
  createLocalJWKSet,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type JWK,
  SignJWT,
  UnsecuredJWT,
} from 'jose'
import { createApp } from '../../src/app.ts'
import { createTokenVerifier } from '../../src/auth/token-verifier.ts'
import { silentLogger } from '../../src/logger.ts'
import { type DatabaseHandle, openEmbedded } from '../../src/store/database.ts'
import { migrateEmbeddedDatabase } from '../../src/store/migrate.ts'
import { checkProjection } from '../support/projection-check.ts'

type Keys = Awaited<ReturnType<typeof generateKeyPair>>
const KID = 'plants-2025'
const now = () => Math.floor(Date.now() / 1000)

let handle: DatabaseHandle
let app: ReturnType<typeof createApp>
let keys: Keys
let otherKeys: Keys
let publicJwk: JWK

// An app that trusts one RS256 key from a local key set and nothing else: no HS256 secret.
beforeAll(async () => {
  handle = await openEmbedded(undefined)
  await migrateEmbeddedDatabase(handle)
  keys = await generateKeyPair('RS256', { extractable: true })
  otherKeys = await generateKeyPair('RS256', { extractable: true })
  publicJwk = { ...(await exportJWK(keys.publicKey)), kid: KID, alg: 'RS256', use: 'sig' }
  app = createApp({
    db: handle.db,
    verifyToken: createTokenVerifier({ keySet: createLocalJWKSet({ keys: [publicJwk] }) }),
    logger: silentLogger(),
  })
})
afterAll(() => handle.close())

const claims = (extra: Record<string, unknown> = {}) => ({ sub: 'alice', exp: now() + 600, ...extra })
const signed = (
  extra: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key = keys.privateKey,
) => new SignJWT(claims(extra)).setProtectedHeader({ alg: 'RS256', kid: KID, ...header }).sign(key)
const hs256 = (secret: Uint8Array) =>
  new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: KID }).sign(secret)
const countEvents = async () => (await checkProjection(handle.db)).events
const segment = (value: unknown) => base64url.encode(JSON.stringify(value))

const createWith = (token: string) =>
  app.handle(
    new Request('http://localhost/plants', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"id": 1, "name": "Stolen"}',
    }),
  )

const attacks: [string, () => Promise<string>][] = [
  ['alg none', async () => new UnsecuredJWT(claims()).encode()],
  [
    'alg none with a kept signature',
    async () => {
      const [, payload, signature] = (await signed()).split('.')
      return `${segment({ alg: 'none', kid: KID })}.${payload}.${signature}`
    },
  ],
  [
    'HS256 signed with the public key in PEM',
    async () => hs256(new TextEncoder().encode(await exportSPKI(keys.publicKey))),
  ],
  [
    'HS256 signed with the public JWK as JSON',
    async () => hs256(new TextEncoder().encode(JSON.stringify(publicJwk))),
  ],
  ['HS256 signed with the modulus bytes', async () => hs256(base64url.decode(publicJwk.n ?? ''))],
  [
    'a tampered payload',
    async () => {
      const [header, , signature] = (await signed()).split('.')
      return `${header}.${segment(claims({ sub: 'mallory' }))}.${signature}`
    },
  ],
  [
    'a tampered header',
    async () => {
      const [, payload, signature] = (await signed()).split('.')
      return `${segment({ alg: 'RS256', kid: KID, crit: ['b64'], b64: false })}.${payload}.${signature}`
    },
  ],
  ['the right kid but another key', async () => signed({}, {}, otherKeys.privateKey)],
  ['a kid with path characters', async () => signed({}, { kid: '../../../../etc/passwd' })],
  ['a kid with SQL characters', async () => signed({}, { kid: "x' OR '1'='1'; DROP TABLE events; --" })],
  ['a kid with NUL and newlines', async () => signed({}, { kid: 'k\u0000\r\nX-Injected: 1' })],
  ['a kid that is not a string', async () => signed({}, { kid: { $ne: null } })],
  [
    'a jku pointing elsewhere',
    async () => signed({}, { kid: 'attacker', jku: 'http://127.0.0.1:1/jwks.json' }),
  ],
  [
    'an embedded jwk header',
    async () => {
      const attackerJwk = await exportJWK(otherKeys.publicKey)
      return signed({}, { kid: 'attacker', jwk: attackerJwk }, otherKeys.privateKey)
    },
  ],
  ['an expired token', async () => signed({ exp: now() - 120 })],
  ['a token not valid for another two minutes', async () => signed({ nbf: now() + 120 })],
  ['a token without exp', async () => signed({ exp: undefined })],
  [
    'a token of 100 KB',
    async () => `${segment({ alg: 'RS256', kid: KID })}.${'A'.repeat(100_000)}.${'B'.repeat(342)}`,
  ],
  [
    'a validly signed 100 KB token with a forged sub claim spliced in',
    async () => {
      const [header, , signature] = (await signed({ pad: 'x'.repeat(75_000) })).split('.')
      return `${header}.${segment(claims({ sub: 'mallory', pad: 'x'.repeat(75_000) }))}.${signature}`
    },
  ],
]

describe('token attacks against a key-set-only verifier', () => {
  test('a genuine RS256 token from the key set is accepted (the attacks below are refused for cause)', async () => {
    const response = await createWith(await signed())
    expect(response.status).toBe(200)
    expect(await countEvents()).toBe(1)
  })

  test.each(attacks)(
    '%s is 401 invalid_token, says why without echoing the token, and stores nothing',
    async (_name, make) => {
      // given a forged or invalid token
      const token = await make()
      const before = await countEvents()
      // when it is used to create a plant
      const response = await createWith(token)
      // then it is refused as an invalid token, never a 5xx
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"')
      const body = (await response.json()) as { error: number; message: string }
      expect(body.error).toBe(401)
      expect(body.message.length).toBeGreaterThan(0)
      for (const part of token.split('.')) if (part.length > 8) expect(body.message).not.toContain(part)
      // and nothing was stored
      expect(await countEvents()).toBe(before)
    },
  )
})
