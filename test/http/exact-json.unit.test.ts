import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { exactInteger, parseJsonExact } from '../../src/http/json-body.ts'

describe('exactInteger', () => {
  test('every int64 written as a JSON integer comes back exactly', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (value) => {
        expect(exactInteger(value.toString())).toBe(value)
      }),
    )
  })

  test.each([
    ['7.0', 7n],
    ['7.000', 7n],
    ['-0', 0n],
    ['0.0', 0n],
    ['1e3', 1000n],
    ['1.5e1', 15n],
    ['12300e-2', 123n],
    ['9007199254740993.0', 9007199254740993n],
    ['9.223372036854775807e18', 9223372036854775807n],
  ])('%s denotes the integer %p', (literal, expected) => {
    expect(exactInteger(literal)).toBe(expected)
  })

  test.each(['1.5', '0.1', '1e-1', '9007199254740993.5', '1e400', '-'])('%s is not an integer', (literal) => {
    expect(exactInteger(literal)).toBeUndefined()
  })
})

describe('parseJsonExact', () => {
  test('keeps id values beyond 2^53 exact and leaves other numbers alone', () => {
    expect(parseJsonExact('{"id": 9007199254740993, "n": 9007199254740993}')).toEqual({
      id: 9007199254740993n,
      n: 9007199254740992,
    })
  })

  test('leaves fractional ids as numbers, for the schema to reject', () => {
    expect(parseJsonExact('{"id": 1.5}')).toEqual({ id: 1.5 })
  })
})
