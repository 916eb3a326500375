import type { TSchema } from '@sinclair/typebox'

// A TypeBox schema as plain JSON Schema: TypeBox's symbol keys ([Kind], [OptionalKind]) do not
// survive JSON, and Elysia's per-schema `error` messages are not JSON Schema, so they are dropped.
export function toJsonSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(schema, (key, value) =>
      key === 'error' && typeof value === 'string' ? undefined : value,
    ),
  )
}
