import { TypeRegistry } from '@sinclair/typebox'

// Two rules JSON Schema keywords cannot express in TypeBox: ids are exact int64 values (parsed as
// bigint, see json-body.ts) and text length counts Unicode code points, not UTF-16 units. The
// schemas keep the JSON Schema keywords for the OpenAPI document; these kinds enforce them.
// TypeBox's registry is process-wide, so the app registers them when it is created (setting a kind
// again replaces it with the same check).
export function registerSchemaKinds(): void {
  TypeRegistry.Set(
    'Int64',
    (_schema, value) => typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX,
  )
  TypeRegistry.Set<{ minLength: number; maxLength: number }>('Text', (schema, value) => {
    if (typeof value !== 'string' || !value.isWellFormed() || value.includes('\u0000')) return false
    const codePoints = countCodePoints(value, schema.maxLength + 1)
    return codePoints >= schema.minLength && codePoints <= schema.maxLength
  })
  // A query value given once, in plain decimal: a repeated parameter arrives as an array and fails.
  TypeRegistry.Set<{ minimum: number; maximum: number }>('IntegerParameter', (schema, value) => {
    if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,9})$/.test(value)) return false
    const number = Number(value)
    return number >= schema.minimum && number <= schema.maximum
  })
  // A position in the event log, as a header carries it (CONTRACT §10).
  TypeRegistry.Set('Position', (_schema, value) => {
    if (typeof value !== 'string' || !/^[0-9]{1,40}$/.test(value)) return false
    return BigInt(value) <= INT64_MAX
  })
}

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

function countCodePoints(text: string, stopAt: number): number {
  let count = 0
  for (const _ of text) if (++count >= stopAt) break
  return count
}
