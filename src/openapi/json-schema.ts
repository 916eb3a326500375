// A TypeBox schema (or a document holding some) as plain JSON: TypeBox's symbol keys ([Kind],
// [OptionalKind]) do not survive JSON, and Elysia's per-schema `error` messages and `elysiaMeta`
// markers are not JSON Schema, so they are dropped. So is `additionalProperties: false`: Elysia
// writes it into every object schema it compiles (its normalize mode drops unknown members, it does
// not refuse them), so it would appear only once a route had served a request.
export function toJsonSchema(schema: object): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(schema, (key, value) => {
      if ((key === 'error' || key === 'elysiaMeta') && typeof value === 'string') return undefined
      return key === 'additionalProperties' && value === false ? undefined : value
    }),
  )
}
