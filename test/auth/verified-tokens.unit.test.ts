import { expect, test } from 'bun:test'
import { verifiedTokens } from '../../src/auth/token-verifier.ts'

const always = async () => true

test('when full, the oldest remembered token makes room', async () => {
  // given
  const cache = verifiedTokens<string>({ maxEntries: 2, now: () => 0 })
  // when
  for (const token of ['a', 'b', 'c']) cache.remember(token, { subject: token, expiresAtMs: 10, key: 'k' })
  // then
  expect([
    (await cache.find('a', always))?.subject,
    (await cache.find('b', always))?.subject,
    (await cache.find('c', always))?.subject,
  ]).toEqual([undefined, 'b', 'c'])
})

test('an entry is given back only before its expiry and while its key is current', async () => {
  // given
  let clock = 0
  const cache = verifiedTokens<string>({ now: () => clock })
  cache.remember('t', { subject: 'alice', expiresAtMs: 100, key: 'k1' })
  // then
  expect(await cache.find('t', async (key) => key === 'k2')).toBeUndefined()
  cache.remember('t', { subject: 'alice', expiresAtMs: 100, key: 'k1' })
  expect(await cache.find('t', always)).toEqual({ subject: 'alice', expiresAtMs: 100, key: 'k1' })
  clock = 100
  expect(await cache.find('t', always)).toBeUndefined()
})

test('a size of 0 remembers nothing', async () => {
  const cache = verifiedTokens<string>({ maxEntries: 0 })
  cache.remember('t', { subject: 'alice', expiresAtMs: Number.MAX_SAFE_INTEGER, key: 'k' })
  expect(await cache.find('t', always)).toBeUndefined()
})
