import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { authentication } from '../auth/authentication.ts'
import type { TokenVerifier } from '../auth/token-verifier.ts'
import { HttpError } from '../http/http-error.ts'
import { readJsonBody } from '../http/json-body.ts'
import { jsonArrayStream } from '../http/json-stream.ts'
import type { RequestIds } from '../http/request-id.ts'
import { errorReply, replies, reply, unauthorized, unavailable, unexpected } from '../openapi/replies.ts'
import type { Database } from '../store/database.ts'
import { type PlantCreator, plantCreator } from './create-plant.ts'
import { decodeCursor, nextPageLink } from './cursor.ts'
import { listPlants } from './list-plants.ts'
import { ListQuery, NEW_PLANT_RULE, NewPlant, PlantView } from './schemas.ts'

export type PlantRoutesDeps = {
  db: Database
  verifyToken: TokenVerifier
  requestIds: RequestIds
  now: () => Date
  // Told after each create that appended an event (the event feed wakes on it).
  onAppended?: () => void
  // How many batches of creates may be in the database at once (group commit); 1 by default.
  batchesInFlight?: number
}

const security = [{ bearerAuth: [] }]

const created = replies({
  200: reply(PlantView, 'The plant response'),
  400: errorReply('The body breaks a rule; the message names the field and the rule'),
  401: unauthorized,
  409: errorReply('The caller already has this id with a different name or tag'),
  413: errorReply('The body is larger than 65536 bytes'),
  415: errorReply('Content-Type is not application/json'),
  500: unexpected,
  503: unavailable,
})

const listed = replies({
  200: reply(Type.Array(PlantView), "The caller's plants", {
    headers: { Link: { schema: Type.String(), description: 'rel="next" link when more plants follow' } },
  }),
  400: errorReply('A bad limit or after parameter'),
  401: unauthorized,
  500: unexpected,
  503: unavailable,
})

export function plantRoutes(deps: PlantRoutesDeps) {
  const createPlant = plantCreator(deps.db, deps.batchesInFlight)
  return new Elysia({ name: 'plants' })
    .use(authentication(deps.verifyToken))
    .resolve(({ request }) => ({ requestId: deps.requestIds.of(request) }))
    .post('/plants', ({ body, owner, requestId }) => create(deps, createPlant, { body, owner, requestId }), {
      // Read the body ourselves (size limit, content type, exact int64 ids) but report its
      // problems only after authentication, in the transform below.
      parse: ({ request }) => readJsonBody(request),
      transform: ({ body }) => {
        if (body instanceof HttpError) throw body
        // Elysia reports a property of an array or string body before the body's own type.
        if (typeof body !== 'object' || body === null || Array.isArray(body))
          throw new HttpError(400, NEW_PLANT_RULE)
      },
      body: NewPlant,
      response: created.response,
      detail: {
        operationId: 'createPlant',
        summary: 'Create a plant',
        tags: ['plants'],
        security,
        responses: created.responses,
      },
    })
    .get('/plants', ({ query, owner }) => list(deps.db, { ...query, owner }), {
      query: ListQuery,
      response: listed.response,
      detail: {
        operationId: 'listPlants',
        summary: "List the caller's plants, oldest first",
        tags: ['plants'],
        security,
        parameters: [
          { name: 'limit', in: 'query', description: 'Maximum number of plants' },
          { name: 'after', in: 'query', description: 'Cursor from a next link' },
        ],
        responses: listed.responses,
      },
    })
}

type CreateRequest = { body: NewPlant; owner: string; requestId: string }

async function create(
  { now, onAppended }: PlantRoutesDeps,
  createPlant: PlantCreator,
  { body, owner, requestId }: CreateRequest,
) {
  const plant = { id: BigInt(body.id), name: body.name, tag: body.tag ?? null }
  const decision = await createPlant({ type: 'CreatePlant', owner, plant, now: now() }, requestId)
  if (decision.outcome === 'created') onAppended?.()
  if (decision.outcome === 'conflict') {
    throw new HttpError(409, `plant ${plant.id} already exists with a different name or tag`)
  }
  const { name, tag } = decision.plant
  return tag === null ? { name } : { name, tag }
}

type ListRequest = { owner: string; limit?: string; after?: string }

async function list(db: Database, { owner, after, ...query }: ListRequest) {
  const limit = query.limit === undefined ? undefined : Number(query.limit)
  const from = after === undefined ? undefined : decodeCursor(after)
  if (after !== undefined && from === undefined) {
    throw new HttpError(400, 'after must be a cursor taken from a next link')
  }
  const listing = await listPlants(db, { owner, limit, from })
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const link = nextPageLink(limit, listing.next)
  if (link !== undefined) headers.link = link
  const body = listing.kind === 'page' ? JSON.stringify(listing.plants) : jsonArrayStream(listing.batches)
  return new Response(body, { headers })
}
