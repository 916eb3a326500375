import { Kind, type Static, type TSchema, Type, TypeRegistry } from '@sinclair/typebox'

// Two rules JSON Schema keywords cannot express in TypeBox: ids are exact int64 values (parsed as
// bigint, see http/exact-json.ts) and text length counts Unicode code points, not UTF-16 units.
// The JSON Schema keywords stay on the schema for the OpenAPI document; these kinds enforce them.
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

TypeRegistry.Set(
  'Int64',
  (_schema, value) => typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX,
)

TypeRegistry.Set<{ minLength: number; maxLength: number }>('Text', (schema, value) => {
  if (typeof value !== 'string' || !value.isWellFormed() || value.includes('\u0000')) return false
  const codePoints = countCodePoints(value, schema.maxLength + 1)
  return codePoints >= schema.minLength && codePoints <= schema.maxLength
})

TypeRegistry.Set<{ minimum: number; maximum: number }>('IntegerParameter', (schema, value) => {
  if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,9})$/.test(value)) return false
  const number = Number(value)
  return number >= schema.minimum && number <= schema.maximum
})

TypeRegistry.Set('Position', (_schema, value) => {
  if (typeof value !== 'string' || !/^[0-9]{1,40}$/.test(value)) return false
  return BigInt(value) <= INT64_MAX
})

function countCodePoints(text: string, stopAt: number): number {
  let count = 0
  for (const _ of text) if (++count >= stopAt) break
  return count
}

// `error` is Elysia's per-schema message; it also keeps Elysia from serialising the (bigint) body.
function text(field: string, minLength: number, maxLength: number) {
  return Type.Unsafe<string>({
    [Kind]: 'Text',
    type: 'string',
    minLength,
    maxLength,
    error: `${field} must be a string of ${minLength} to ${maxLength} characters, well-formed Unicode without U+0000`,
  })
}

export const NEW_PLANT_RULE = 'the body must be a JSON object with id, name and an optional tag'
const idRule = 'id is required and must be an integer from -9223372036854775808 to 9223372036854775807'

export const NewPlant = Type.Object(
  {
    // Parsed ids are always bigint; the type also admits a number so that typed clients (Eden,
    // which writes bodies with JSON.stringify) can send ids up to 2^53 as plain numbers.
    id: Type.Unsafe<bigint | number>({ [Kind]: 'Int64', type: 'integer', format: 'int64', error: idRule }),
    name: text('name', 1, 1024),
    tag: Type.Optional(
      Type.Union([text('tag', 0, 1024), Type.Null()], {
        error: 'tag must be null or a string of 0 to 1024 characters, well-formed Unicode without U+0000',
      }),
    ),
  },
  {
    error: 'the body must be a JSON object with id, name and an optional tag',
    description: 'A plant to create',
  },
)
export type NewPlant = Static<typeof NewPlant>

export const Plant = Type.Object(
  { name: Type.String(), tag: Type.Optional(Type.String()) },
  { description: 'A plant as returned by the service' },
)
export type Plant = Static<typeof Plant>

export const ErrorBody = Type.Object({
  error: Type.Integer({ format: 'int32', description: 'The HTTP status code' }),
  message: Type.String({ minLength: 1 }),
})
export type ErrorBody = Static<typeof ErrorBody>

export const ListQuery = Type.Object({
  limit: Type.Optional(
    Type.Unsafe<string>({
      [Kind]: 'IntegerParameter',
      type: 'integer',
      format: 'int32',
      minimum: 0,
      maximum: 2147483647,
      error: 'limit must be a single integer from 0 to 2147483647',
    }),
  ),
  after: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{1,64}$',
      description: 'Opaque cursor from a next link',
      error: 'after must be a cursor taken from a next link',
    }),
  ),
})

export const POSITION_HEADER = 'plant-store-position'
const positionRule = `${POSITION_HEADER} must be a decimal integer from 0 to 9223372036854775807`

// Read-your-writes (CONTRACT §10): a create's answer carries the position of its event, and a
// listing that sends back the highest one received shows every plant created up to it.
export const Position = Type.Unsafe<string>({
  [Kind]: 'Position',
  type: 'string',
  pattern: '^[0-9]{1,40}$',
  description: 'The position of an event in the log, in decimal',
  error: positionRule,
})

export const ListHeaders = Type.Object({ [POSITION_HEADER]: Type.Optional(Position) })

export type Schema = TSchema
