import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { parseEventData } from '../../src/event-log/event-data.ts'

const beyondDoubles = fc.oneof(
  fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 63n - 1n }),
  fc.bigInt({ min: -(2n ** 63n), max: -(2n ** 53n) - 1n }),
)

test('given integers beyond 2^53 anywhere in stored data, when parsed, then each comes back exact', () => {
  fc.assert(
    fc.property(beyondDoubles, fc.constantFrom(':', ': ', ',', ', ', '['), (value, gap) => {
      // PostgreSQL prints jsonb with a space after ':' and ','; the parser must not depend on it
      const text = gap.startsWith('[')
        ? `[${value}]`
        : gap.startsWith(':')
          ? `{"n"${gap}${value}}`
          : `[1${gap}${value}]`
      const parsed = parseEventData(text) as unknown[] | { n: unknown }
      expect(Array.isArray(parsed) ? parsed.at(-1) : parsed.n).toBe(value)
    }),
  )
})

test('given long digit strings and ordinary numbers, when parsed, then they are left as they are', () => {
  expect(parseEventData('{"id": "9007199254740993", "name": "x 12345678901234567"}')).toEqual({
    id: '9007199254740993',
    name: 'x 12345678901234567',
  })
  expect(parseEventData('{"n": 1.5, "m": 42}')).toEqual({ n: 1.5, m: 42 })
})
