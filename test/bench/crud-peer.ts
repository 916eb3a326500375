import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import postgres from 'postgres'
import { authentication } from '../../src/auth/authentication.ts'
import { createTokenVerifier } from '../../src/auth/token-verifier.ts'
import { registerSchemaKinds } from '../../src/http/schema-kinds.ts'
import { ListQuery, PlantView } from '../../src/plants/schemas.ts'
import { Failure } from '../../src/shared/errors.ts'
import { createChecks } from './create-checks.ts'

// The CRUD peer: the create a user would write instead of the service, with the same framework,
// body reading, schema, token check, driver and pool size, and no events: one prepared
// `INSERT … ON CONFLICT DO NOTHING` per request into a table of its own, and a read of the stored
// row only when the insert found one (retry or conflict). A listing is one prepared keyset query
// on the primary key, with a next link when more follow.
registerSchemaKinds()
const secret = new TextEncoder().encode(process.env.AUTH_JWT_SECRET ?? '')
const sql = postgres(process.env.DATABASE_URL ?? '', {
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
  onnotice: () => {},
})
await sql`create table if not exists crud_plants (
  owner text not null, id bigint not null, name text not null, tag text, primary key (owner, id))`

const app = new Elysia()
  .use(authentication(createTokenVerifier({ secret })))
  .post(
    '/plants',
    async ({ body, owner }) => {
      const id = BigInt(body.id).toString()
      const tag = body.tag ?? null
      const inserted = await sql`insert into crud_plants (owner, id, name, tag)
        values (${owner}, ${id}, ${body.name}, ${tag}) on conflict do nothing`
      if (inserted.count === 0) {
        const [stored] = await sql`select name, tag from crud_plants where owner = ${owner} and id = ${id}`
        if (stored?.name !== body.name || stored?.tag !== tag) throw new Failure('CONFLICT', 'conflict')
      }
      return tag === null ? { name: body.name } : { name: body.name, tag }
    },
    createChecks,
  )
  .get(
    '/plants',
    async ({ query, owner, set }) => {
      const limit = query.limit === undefined ? 1000 : Number(query.limit)
      const after = query.after ?? '-9223372036854775808'
      // Ordered by the column, not the text output named after it: pages in id order, by its index.
      const rows = await sql`select id::text, name, tag from crud_plants
        where owner = ${owner} and id > ${after} order by crud_plants.id limit ${limit + 1}`
      const page = rows.slice(0, limit)
      if (rows.length > limit)
        set.headers.link = `</plants?limit=${limit}&after=${page.at(-1)?.id}>; rel="next"`
      return page.map((row) => (row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag }))
    },
    { query: ListQuery, response: { 200: Type.Array(PlantView) } },
  )
  .listen({ hostname: '127.0.0.1', port: Number(process.env.PORT ?? 0) })

console.log(JSON.stringify({ msg: 'plant store listening (CRUD peer, no events)', port: app.server?.port }))
