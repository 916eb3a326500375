import { Kind, Type } from '@sinclair/typebox'

// A query parameter holding one decimal integer (checked by the IntegerParameter kind, see
// schema-kinds.ts). It arrives as a string; its type also admits a number, which typed clients
// (Eden) write in decimal. Elysia keeps only the last of a
// repeated query parameter unless the schema carries its `elysiaMeta: 'ArrayQuery'` marker (what
// its own t.ArrayQuery sets, which would also split values on commas and brackets); marked, a
// repeated parameter arrives as an array, which the kind refuses, so `?limit=1&limit=2` is a 400
// rather than a silent pick. The marker is not public API: this file is its only user, and
// test/plants/plants-api.int.test.ts (limit given twice) fails if Elysia changes it.
export function queryInteger(options: { minimum: number; maximum: number; format: string; error: string }) {
  return Type.Unsafe<string | number>({
    [Kind]: 'IntegerParameter',
    type: 'integer',
    elysiaMeta: 'ArrayQuery',
    ...options,
  })
}
