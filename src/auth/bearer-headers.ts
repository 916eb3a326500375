import { type TProperties, Type } from '@sinclair/typebox'

// The request headers of a route behind a bearer token: Authorization, and the route's own. The
// token is checked before validation (auth/authentication.ts answers 401 itself), so the schema takes
// any text; the OpenAPI document shows it as the route's security requirement.
export function BearerHeaders<Properties extends TProperties>(properties: Properties) {
  return Type.Object({
    authorization: Type.Optional(Type.String({ description: 'Bearer <token>' })),
    ...properties,
  })
}
