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
import { createTokenVerifier, type VerifierSettings } from '../../src/auth/token-verifier.ts'
import type { DatabaseHandle } from '../../src/database/database.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { type TestApp, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { checkProjection } from '../support/projection-check.ts'

type Keys = Awaited<ReturnType<typeof generateKeyPair>>
type App = TestApp['app']
type Sign = (extra?: Record<string, unknown>, header?: Record<string, unknown>) => Promise<string>
const KID = 'plants-2025'
const SECRET = new TextEncoder().encode('token-attack-secret-of-at-least-32-bytes')
const now = () => Math.floor(Date.now() / 1000)

let handle: DatabaseHandle
let keys: Keys
let otherKeys: Keys
let publicJwk: JWK
const apps = new Map<string, App>()

// The three ways the service can be configured to verify tokens: an identity provider's key set
// alone (RS256 here), the HS256 secret alone (AUTH_JWT_SECRET, and the embedded default), and both.
const VERIFIERS = ['key set only', 'HS256 secret only', 'secret and key set'] as const
type VerifierKind = (typeof VERIFIERS)[number]

beforeAll(async () => {
  handle = await openStorage({ kind: 'memory' })
  keys = await generateKeyPair('RS256', { extractable: true })
  otherKeys = await generateKeyPair('RS256', { extractable: true })
  publicJwk = { ...(await exportJWK(keys.publicKey)), kid: KID, alg: 'RS256', use: 'sig' }
  const keySet = createLocalJWKSet({ keys: [publicJwk] })
  const settings: Record<VerifierKind, VerifierSettings> = {
    'key set only': { keySet },
    'HS256 secret only': { secret: SECRET },
    'secret and key set': { secret: SECRET, keySet },
  }
  for (const kind of VERIFIERS) {
    apps.set(
      kind,
      testApp({ db: handle.db, keyring: handle.keyring, verifyToken: createTokenVerifier(settings[kind]) })
        .app,
    )
  }
})
afterAll(() => handle.close())

const claims = (extra: Record<string, unknown> = {}) => ({ sub: 'alice', exp: now() + 600, ...extra })
const rs256 =
  (key?: CryptoKey): Sign =>
  (extra = {}, header = {}) =>
    new SignJWT(claims(extra))
      .setProtectedHeader({ alg: 'RS256', kid: KID, ...header })
      .sign(key ?? keys.privateKey)
const hs256 =
  (secret: Uint8Array): Sign =>
  (extra = {}, header = {}) =>
    new SignJWT(claims(extra)).setProtectedHeader({ alg: 'HS256', kid: KID, ...header }).sign(secret)
// How a genuine token is signed for each verifier.
const genuine = (kind: VerifierKind): Sign => (kind === 'HS256 secret only' ? hs256(SECRET) : rs256())
const countEvents = async () => (await checkProjection(handle.db, handle.keyring)).events
const segment = (value: unknown) => base64url.encode(JSON.stringify(value))

const createWith = (kind: VerifierKind, token: string) =>
  (apps.get(kind) as App).handle(
    new Request('http://localhost/plants', {
      method: 'POST',
      headers: { ...tokenHeader(token), 'content-type': 'application/json' },
      body: '{"id": 1, "name": "Stolen"}',
    }),
  )

const attacks: [string, (sign: Sign) => Promise<string>][] = [
  ['alg none', async () => new UnsecuredJWT(claims()).encode()],
  [
    'alg none with a kept signature',
    async (sign) => {
      const [, payload, signature] = (await sign()).split('.')
      return `${segment({ alg: 'none', kid: KID })}.${payload}.${signature}`
    },
  ],
  [
    'HS256 signed with the public key in PEM',
    async () => hs256(new TextEncoder().encode(await exportSPKI(keys.publicKey)))(),
  ],
  [
    'HS256 signed with the public JWK as JSON',
    async () => hs256(new TextEncoder().encode(JSON.stringify(publicJwk)))(),
  ],
  ['HS256 signed with the modulus bytes', async () => hs256(base64url.decode(publicJwk.n ?? ''))()],
  ['HS256 signed with another secret', async () => hs256(new TextEncoder().encode('x'.repeat(40)))()],
  [
    'a tampered payload',
    async (sign) => {
      const [header, , signature] = (await sign()).split('.')
      return `${header}.${segment(claims({ sub: 'mallory' }))}.${signature}`
    },
  ],
  [
    'a tampered header',
    async (sign) => {
      const [header, payload, signature] = (await sign()).split('.')
      const decoded = JSON.parse(new TextDecoder().decode(base64url.decode(header ?? '')))
      return `${segment({ ...decoded, crit: ['b64'], b64: false })}.${payload}.${signature}`
    },
  ],
  ['the right kid but another RS256 key', async () => rs256(otherKeys.privateKey)()],
  // A kid is only a name: these are signed by an attacker with the key the kid would point to
  // if it were used as a path or spliced into SQL, or with the attacker's own RSA key.
  [
    'a kid with path characters, HS256-signed with what the path holds',
    async () => hs256(new Uint8Array([0]))({}, { kid: '../../../../dev/null' }),
  ],
  [
    'a kid with path characters, RS256-signed with an attacker key',
    async () => rs256(otherKeys.privateKey)({}, { kid: '../../../../etc/passwd' }),
  ],
  [
    'a kid with SQL characters, HS256-signed with what the injection selects',
    async () =>
      hs256(new TextEncoder().encode('attacker-key'))({}, { kid: "x' UNION SELECT 'attacker-key' --" }),
  ],
  [
    'a kid with SQL characters, RS256-signed with an attacker key',
    async () => rs256(otherKeys.privateKey)({}, { kid: "x' OR '1'='1'; DROP TABLE events; --" }),
  ],
  [
    'a kid with NUL and newlines',
    async () => rs256(otherKeys.privateKey)({}, { kid: 'k\u0000\r\nX-Injected: 1' }),
  ],
  ['a kid that is not a string', async () => rs256(otherKeys.privateKey)({}, { kid: { $ne: null } })],
  [
    'a jku pointing elsewhere',
    async () => rs256(otherKeys.privateKey)({}, { kid: 'attacker', jku: 'http://127.0.0.1:1/jwks.json' }),
  ],
  [
    'an embedded jwk header',
    async () => {
      const attackerJwk = await exportJWK(otherKeys.publicKey)
      return rs256(otherKeys.privateKey)({}, { kid: 'attacker', jwk: attackerJwk })
    },
  ],
  ['an expired token', async (sign) => sign({ exp: now() - 120 })],
  ['a token not valid for another two minutes', async (sign) => sign({ nbf: now() + 120 })],
  ['a token without exp', async (sign) => sign({ exp: undefined })],
  ['a token without sub', async (sign) => sign({ sub: undefined })],
  ['a token whose sub is not a string', async (sign) => sign({ sub: 42 })],
  ['a token whose sub is 256 characters', async (sign) => sign({ sub: 'x'.repeat(256) })],
  ['a token whose exp is a string', async (sign) => sign({ exp: String(now() + 600) })],
  [
    'a token of 100 KB',
    async () => `${segment({ alg: 'RS256', kid: KID })}.${'A'.repeat(100_000)}.${'B'.repeat(342)}`,
  ],
  [
    'a validly signed 100 KB token with a forged sub claim spliced in',
    async (sign) => {
      const [header, , signature] = (await sign({ pad: 'x'.repeat(75_000) })).split('.')
      return `${header}.${segment(claims({ sub: 'mallory', pad: 'x'.repeat(75_000) }))}.${signature}`
    },
  ],
]

describe.each(VERIFIERS)('token attacks against a verifier with the %s', (kind) => {
  test('a genuine token is accepted (the attacks below are refused for cause)', async () => {
    const before = await countEvents()
    const response = await createWith(kind, await genuine(kind)())
    expect(response.status).toBe(200)
    expect(await countEvents()).toBeLessThanOrEqual(before + 1)
  })

  test.each(attacks)(
    '%s is 401 invalid_token, says why without echoing the token, and stores nothing',
    async (_name, make) => {
      // given a forged or invalid token
      const token = await make(genuine(kind))
      const before = await countEvents()
      // when it is used to create a plant
      const response = await createWith(kind, token)
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
