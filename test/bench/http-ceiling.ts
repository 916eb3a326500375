import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { authentication } from '../../src/auth/authentication.ts'
import { createTokenVerifier } from '../../src/auth/token-verifier.ts'
import { registerSchemaKinds } from '../../src/http/schema-kinds.ts'
import { ListQuery, PlantView } from '../../src/plants/schemas.ts'
import { createChecks } from './create-checks.ts'

// The HTTP ceiling: the service's routes with the same body reading, TypeBox schemas and JWT
// check, and no database. Whatever the service does beyond this is storage and bookkeeping.
const secret = new TextEncoder().encode(process.env.AUTH_JWT_SECRET ?? '')
const page = JSON.stringify(
  Array.from({ length: 20 }, (_, index) => ({ name: `plant ${index}`, tag: 'bench' })),
)

const validators = { etag: '"20.0.20.0"', 'cache-control': 'private, no-cache', 'plant-store-position': '20' }

registerSchemaKinds()
const app = new Elysia()
  .use(authentication(createTokenVerifier({ secret })))
  .post(
    '/plants',
    ({ body }) => (typeof body.tag === 'string' ? { name: body.name, tag: body.tag } : { name: body.name }),
    createChecks,
  )
  // A page carries the service's validators; a request that sends an ETag gets a 304, as if the
  // tag were current.
  .get(
    '/plants',
    ({ request }) =>
      request.headers.has('if-none-match')
        ? new Response(null, { status: 304, headers: validators })
        : new Response(page, { headers: { 'content-type': 'application/json', ...validators } }),
    {
      query: ListQuery,
      response: { 200: Type.Array(PlantView) },
    },
  )
  .listen({ hostname: '127.0.0.1', port: Number(process.env.PORT ?? 0) })

console.log(
  JSON.stringify({ msg: 'plant store listening (http ceiling, no database)', port: app.server?.port }),
)
