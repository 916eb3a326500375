import { describe, expect, test } from 'bun:test'
import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose'
import { createTokenVerifier } from '../../src/auth/token-verifier.ts'

const secret = new TextEncoder().encode('unit-test-secret-of-at-least-32-bytes')
const otherSecret = new TextEncoder().encode('another-secret-of-at-least-32-bytes!!')
const nowSeconds = () => Math.floor(Date.now() / 1000)

function token(claims: Record<string, unknown> = {}, key = secret) {
  return new SignJWT({ sub: 'alice', exp: nowSeconds() + 600, ...claims })
    .setProtectedHeader({ alg: 'HS256' })
    .sign(key)
}

async function rejection(verify: ReturnType<typeof createTokenVerifier>, jwt: string): Promise<string> {
  const error = await verify(jwt).then(
    () => undefined,
    (failure: unknown) => failure,
  )
  expect(error).toMatchObject({ code: 'TOKEN_REJECTED' })
  return (error as Error).message
}

describe('HS256 verification', () => {
  const verify = createTokenVerifier({ secret })

  test('a valid token yields its subject', async () => {
    expect(await verify(await token())).toMatchObject({ subject: 'alice' })
  })

  test('a valid token yields its expiry in milliseconds, also when it is remembered', async () => {
    const exp = nowSeconds() + 321
    const jwt = await token({ exp })
    expect(await verify(jwt)).toEqual({ subject: 'alice', expiresAt: exp * 1000 })
    expect(await verify(jwt)).toEqual({ subject: 'alice', expiresAt: exp * 1000 })
  })

  test.each([
    ['expired', { exp: nowSeconds() - 60 }, 'expired'],
    ['not yet valid', { nbf: nowSeconds() + 600 }, 'not valid yet'],
    ['without exp', { exp: undefined }, 'exp'],
    ['without sub', { sub: undefined }, 'sub'],
    ['with an over-long sub', { sub: 'x'.repeat(256) }, 'sub'],
    ['with an empty sub', { sub: '' }, 'sub'],
  ])('a token %s is rejected and the reason is named', async (_label, claims, reason) => {
    expect(await rejection(verify, await token(claims))).toContain(reason)
  })

  test('an expiry within the 30 s clock tolerance is still accepted', async () => {
    expect(await verify(await token({ exp: nowSeconds() - 10 }))).toMatchObject({ subject: 'alice' })
  })

  test('the clock tolerance is at most 30 s: expired 29 s ago is accepted, 31 s ago refused', async () => {
    // a fixed clock, so the test does not depend on how long signing takes
    const at = Date.now()
    const fixed = createTokenVerifier({ secret, now: () => at })
    const expiredAgo = async (seconds: number) => token({ exp: Math.floor(at / 1000) - seconds })
    expect(await fixed(await expiredAgo(29))).toMatchObject({ subject: 'alice' })
    expect(await rejection(fixed, await expiredAgo(31))).toContain('expired')
    // and no setting widens it past 30 s
    const lenient = createTokenVerifier({ secret, now: () => at, clockToleranceSeconds: 60 })
    expect(await rejection(lenient, await expiredAgo(31))).toContain('expired')
  })

  test('a sub is counted in Unicode code points: 128 and 255 emoji are accepted, 256 code points refused', async () => {
    const sprout = '\u{1F331}'
    for (const sub of [sprout.repeat(128), sprout.repeat(255), 'x'.repeat(255)]) {
      expect(await verify(await token({ sub }))).toMatchObject({ subject: sub })
    }
    expect(await rejection(verify, await token({ sub: `${sprout.repeat(255)}x` }))).toContain('sub')
    expect(await rejection(verify, await token({ sub: sprout.repeat(256) }))).toContain('sub')
  })

  test('a token signed with another secret has a bad signature', async () => {
    expect(await rejection(verify, await token({}, otherSecret))).toContain('signature')
  })

  test('alg none is never accepted', async () => {
    const unsigned = new UnsecuredJWT({ sub: 'alice' }).setExpirationTime('1h').encode()
    expect(await rejection(verify, unsigned)).toContain('algorithm')
  })

  test('a tampered payload fails the signature check', async () => {
    const [header, , signature] = (await token()).split('.')
    const payload = btoa(JSON.stringify({ sub: 'mallory', exp: nowSeconds() + 600 })).replace(/=+$/, '')
    expect(await rejection(verify, `${header}.${payload}.${signature}`)).toContain('signature')
  })

  test.each(['', 'abc', 'a.b.c', '...'])('garbage %p is a malformed token', async (garbage) => {
    expect(await rejection(verify, garbage)).toContain('malformed')
  })

  test('the message never echoes the token', async () => {
    const jwt = await token({ exp: nowSeconds() - 60 })
    expect(await rejection(verify, jwt)).not.toContain(jwt.split('.')[1] ?? '')
  })
})

describe('issuer and audience', () => {
  const verify = createTokenVerifier({ secret, issuer: 'https://id.example', audience: 'plants' })

  test('matching iss and aud pass', async () => {
    expect(await verify(await token({ iss: 'https://id.example', aud: 'plants' }))).toMatchObject({
      subject: 'alice',
    })
  })

  test('another audience is rejected as such', async () => {
    expect(await rejection(verify, await token({ iss: 'https://id.example', aud: 'other' }))).toContain(
      'audience',
    )
  })

  test('another issuer is rejected as such', async () => {
    expect(await rejection(verify, await token({ iss: 'https://evil.example', aud: 'plants' }))).toContain(
      'issuer',
    )
  })
})

describe('remembered tokens', () => {
  test('a remembered token is refused once its exp has passed, beyond the tolerance', async () => {
    // given
    let clock = Date.now()
    const verify = createTokenVerifier({ secret, now: () => clock })
    const jwt = await token({ exp: Math.floor(clock / 1000) + 60 })
    expect(await verify(jwt)).toMatchObject({ subject: 'alice' })
    // when
    clock += 95_000
    // then
    expect(await rejection(verify, jwt)).toContain('expired')
  })

  test('a remembered token is refused once the key that verified it has left the key set', async () => {
    // given
    const first = await generateKeyPair('ES256')
    const second = await generateKeyPair('ES256')
    let current = first.publicKey
    const verify = createTokenVerifier({ keySet: async () => current })
    const jwt = await new SignJWT({ sub: 'alice', exp: nowSeconds() + 600 })
      .setProtectedHeader({ alg: 'ES256' })
      .sign(first.privateKey)
    expect(await verify(jwt)).toMatchObject({ subject: 'alice' })
    // when
    current = second.publicKey
    // then
    expect(await rejection(verify, jwt)).toContain('signature')
  })

  test('a remembered token still names its own subject, and another token is verified afresh', async () => {
    // given
    const verify = createTokenVerifier({ secret })
    const alice = await token()
    await verify(alice)
    // when
    const forged = await token({ sub: 'alice' }, otherSecret)
    // then
    expect(await verify(alice)).toMatchObject({ subject: 'alice' })
    expect(await rejection(verify, forged)).toContain('signature')
  })
})
