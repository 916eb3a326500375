import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeCursor, encodeCursor } from '../../src/plants/cursor.ts'

test('every position survives a cursor round trip, in URL-safe characters', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }), (position) => {
      const cursor = encodeCursor(position)
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
      expect(decodeCursor(cursor)).toBe(position)
    }),
  )
})

test.each([
  '',
  'x',
  '!!!',
  btoa('p1.0'),
  btoa('p1.-5'),
  btoa('p2.5'),
  btoa('p1.99999999999999999999'),
  btoa('p1.5x'),
])('a malformed cursor %p decodes to nothing', (cursor) => {
  expect(decodeCursor(cursor.replace(/=+$/, ''))).toBeUndefined()
})
