import { Kind, type Static, Type } from '@sinclair/typebox'
import { BearerHeaders } from '../auth/bearer-headers.ts'
import { queryInteger } from '../http/query-integer.ts'

// The API's shapes. Int64, Text and IntegerParameter are kinds checked by http/schema-kinds.ts.

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
  { error: NEW_PLANT_RULE, description: 'A plant to create' },
)
export type NewPlant = Static<typeof NewPlant>

// A plant as the API shows it (the stored plant, domain.ts `Plant`, also has its id).
export const PlantView = Type.Object(
  { name: Type.String(), tag: Type.Optional(Type.String()) },
  { description: 'A plant as returned by the service' },
)
export type PlantView = Static<typeof PlantView>

export const ListQuery = Type.Object({
  limit: Type.Optional(
    queryInteger({
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

// Read-your-writes (docs/operating.md, Scaling out): a create's answer carries the position of its event, and a
// listing that sends back the highest one received shows every plant created up to it. Checked by
// the Position kind (http/schema-kinds.ts): decimal, 0 to 9223372036854775807, leading zeros allowed.
// It arrives as a string; its type also admits a bigint, which typed clients send as its digits.
// Never a number: positions pass 2^53, where a number loses digits.
export const Position = Type.Unsafe<string | bigint>({
  [Kind]: 'Position',
  type: 'string',
  pattern: '^[0-9]{1,40}$',
  description: 'The position of an event in the log, in decimal',
  error: `${POSITION_HEADER} must be a decimal integer from 0 to 9223372036854775807`,
})

export const ListHeaders = BearerHeaders({
  [POSITION_HEADER]: Type.Optional(Position),
  'if-none-match': Type.Optional(Type.String({ description: 'Entity tags, or *' })),
})
export type ListHeaders = Static<typeof ListHeaders>
