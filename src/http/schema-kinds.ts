import { TypeRegistry } from '@sinclair/typebox'
import { INT64_MAX, isPlantId, isText } from '../domain/plant.ts'

// Two rules JSON Schema keywords cannot express in TypeBox: ids are exact int64 values (parsed as
// bigint, see json-body.ts) and text length counts Unicode code points, not UTF-16 units. The
// schemas keep the JSON Schema keywords for the OpenAPI document; these kinds enforce them.
// TypeBox's registry is process-wide, so the app registers them when it is created (setting a kind
// again replaces it with the same check).
export function registerSchemaKinds(): void {
  TypeRegistry.Set('Int64', (_schema, value) => isPlantId(value))
  TypeRegistry.Set<{ minLength: number; maxLength: number }>('Text', (schema, value) =>
    isText(value, schema.minLength, schema.maxLength),
  )
  // A query value given once, in plain decimal: a repeated parameter arrives as an array and fails.
  TypeRegistry.Set<{ minimum: number; maximum: number }>('IntegerParameter', (schema, value) => {
    if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,9})$/.test(value)) return false
    const number = Number(value)
    return number >= schema.minimum && number <= schema.maximum
  })
  // A position in the event log, as a header carries it (docs/operating.md, Scaling out).
  TypeRegistry.Set('Position', (_schema, value) => {
    if (typeof value !== 'string' || !/^[0-9]{1,40}$/.test(value)) return false
    return BigInt(value) <= INT64_MAX
  })
}
