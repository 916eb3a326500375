import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { authentication } from '../auth/authentication.ts'
import type { TokenVerifier } from '../auth/token-verifier.ts'
import { HttpError } from '../http/http-error.ts'
import { readJsonBody } from '../http/json-body.ts'
import { jsonArrayStream } from '../http/json-stream.ts'
import type { Database } from '../store/database.ts'
import { plantCreator } from './create-plant.ts'
import { decodeCursor, encodeCursor } from './cursor.ts'
import { listPlants } from './list-plants.ts'
import { ErrorBody, ListQuery, NEW_PLANT_RULE, NewPlant, Plant } from './schemas.ts'

export type PlantRoutesDeps = {
  db: Database
  verifyToken: TokenVerifier
  now: () => Date
  // Told after each create that appended an event (the event feed wakes on it).
  onAppended?: () => void
}

const errors = {
  400: ErrorBody,
  401: ErrorBody,
  409: ErrorBody,
  413: ErrorBody,
  415: ErrorBody,
  503: ErrorBody,
}

export function plantRoutes({ db, verifyToken, now, onAppended }: PlantRoutesDeps) {
  const createPlant = plantCreator(db)
  return new Elysia({ name: 'plants' })
    .use(authentication(verifyToken))
    .post(
      '/plants',
      async ({ body, owner, set }) => {
        const plant = { id: BigInt(body.id), name: body.name, tag: body.tag ?? null }
        const requestId = String(set.headers['x-request-id'])
        const decision = await createPlant({ type: 'CreatePlant', owner, plant, now: now() }, requestId)
        if (decision.outcome === 'created') onAppended?.()
        if (decision.outcome === 'conflict') {
          throw new HttpError(409, `plant ${plant.id} already exists with a different name or tag`)
        }
        return decision.plant.tag === null
          ? { name: decision.plant.name }
          : { name: decision.plant.name, tag: decision.plant.tag }
      },
      {
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
        response: { 200: Plant, ...errors },
        detail: { summary: 'Create a plant', security: [{ bearerAuth: [] }] },
      },
    )
    .get(
      '/plants',
      async ({ query, owner, request }) => {
        const limit = readLimit(request)
        const from = query.after === undefined ? undefined : decodeCursor(query.after)
        if (query.after !== undefined && from === undefined) {
          throw new HttpError(400, 'after must be a cursor taken from a next link')
        }
        const listing = await listPlants(db, { owner, limit, from })
        const headers: Record<string, string> = { 'content-type': 'application/json' }
        if (listing.next !== undefined && limit !== undefined && limit > 0) {
          headers.link = `</plants?limit=${limit}&after=${encodeCursor(listing.next)}>; rel="next"`
        }
        const body =
          listing.kind === 'page' ? JSON.stringify(listing.plants) : jsonArrayStream(listing.batches)
        return new Response(body, { headers })
      },
      {
        query: ListQuery,
        response: { 200: Type.Array(Plant), ...errors },
        detail: { summary: "List the caller's plants, oldest first", security: [{ bearerAuth: [] }] },
      },
    )
}

// The schema checks the value; only the raw query can tell that `limit` was given twice.
function readLimit(request: Request): number | undefined {
  const values = new URL(request.url).searchParams.getAll('limit')
  if (values.length > 1) throw new HttpError(400, 'limit must be a single integer from 0 to 2147483647')
  return values[0] === undefined ? undefined : Number(values[0])
}
