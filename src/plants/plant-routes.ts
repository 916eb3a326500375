import { Elysia } from 'elysia'
import { authentication } from '../auth/authentication.ts'
import { BearerHeaders } from '../auth/bearer-headers.ts'
import type { TokenVerifier } from '../auth/token-verifier.ts'
import type { Keyring } from '../crypto/keyring.ts'
import type { Database } from '../database/database.ts'
import { ownerKeyCache } from '../event-log/owner-keys.ts'
import { matchesIfNoneMatch } from '../http/if-none-match.ts'
import { readJsonBody } from '../http/json-body.ts'
import { jsonArrayStream } from '../http/json-stream.ts'
import type { RequestIds } from '../http/request-id.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import type { Tracing } from '../tracing/tracing.ts'
import { type PlantCreator, plantCreator } from './create-plant.ts'
import { decodeCursor, nextPageLink } from './cursor.ts'
import { type ListingVersion, listingTag } from './etag.ts'
import { primaryReads, type ReadPlants } from './listing-source.ts'
import { created, listed } from './plant-replies.ts'
import { ListHeaders, ListQuery, NEW_PLANT_RULE, NewPlant, POSITION_HEADER } from './schemas.ts'

export type PlantRoutesDeps = {
  db: Database
  // The service's keys: creates seal their events under their owners' keys.
  keyring: Keyring
  verifyToken: TokenVerifier
  requestIds: RequestIds
  now: () => Date
  // Told after each create that appended an event (the event feed wakes on it).
  onAppended?: () => void
  // Where listings are read: the primary (`db`) unless replicas are configured.
  readPlants?: ReadPlants
  // How many batches of creates may be in the database at once (group commit); 1 by default.
  batchesInFlight?: number
  // How many statements of grouped listings may be in the database at once; 1 by default.
  readsInFlight?: number
  // How long a create's body may take to arrive before it is answered 408.
  bodyTimeoutMs?: number
  // With tracing on: a create's event keeps its request's span (`traceparentOf`), and the batch
  // statement it joined has a span of its own.
  tracing?: { tracing: Tracing; traceparentOf: (request: Request) => string | undefined }
}

export function plantRoutes(deps: PlantRoutesDeps) {
  const readPlants = deps.readPlants ?? primaryReads(deps.db, deps.readsInFlight)
  const creator = plantCreator(
    deps.db,
    ownerKeyCache(deps.keyring),
    deps.batchesInFlight,
    deps.tracing?.tracing,
  )
  const traceparentOf = deps.tracing?.traceparentOf
  return new Elysia({ name: 'plants' })
    .use(authentication(deps.verifyToken))
    .resolve(({ request }) => ({ requestId: deps.requestIds.of(request) }))
    .post(
      '/plants',
      async ({ body, owner, requestId, request, set }) => {
        const traceparent = traceparentOf?.(request)
        const { plant, position } = await create(deps, creator, { body, owner, requestId, traceparent })
        set.headers[POSITION_HEADER] = position.toString()
        // As the listings and errors say it; Elysia's default adds `;charset=utf-8`.
        set.headers['content-type'] = 'application/json'
        return plant
      },
      {
        // Read the body ourselves (size limit, content type, exact int64 ids) but report its
        // problems only after authentication, in the transform below.
        parse: ({ request }) => readJsonBody(request, deps.bodyTimeoutMs),
        transform: ({ body }) => {
          if (isFailure(body)) throw body
          // Elysia reports a property of an array or string body before the body's own type.
          if (typeof body !== 'object' || body === null || Array.isArray(body))
            throw new Failure('BAD_REQUEST', NEW_PLANT_RULE)
        },
        body: NewPlant,
        headers: BearerHeaders({}),
        response: created.response,
        detail: {
          operationId: 'createPlant',
          summary: 'Create a plant',
          tags: ['plants'],
          responses: created.responses,
        },
      },
    )
    .get('/plants', ({ query, headers, owner }) => list(readPlants, { ...query, owner }, headers), {
      query: ListQuery,
      headers: ListHeaders,
      response: listed.response,
      detail: {
        operationId: 'listPlants',
        summary: "List the caller's plants, oldest first",
        tags: ['plants'],
        parameters: [
          { name: 'limit', in: 'query', description: 'Maximum number of plants' },
          { name: 'after', in: 'query', description: 'Cursor from a next link' },
          {
            name: POSITION_HEADER,
            in: 'header',
            description:
              'The highest position a create answered you: the listing shows every plant created up to it, wherever it is read',
          },
          {
            name: 'if-none-match',
            in: 'header',
            description: 'ETags of listings you hold (or *): 304 without a body when one is current',
          },
        ],
        responses: listed.responses,
      },
    })
}

type CreateInput = { body: NewPlant; owner: string; requestId: string; traceparent?: string }

async function create(
  { now, onAppended }: PlantRoutesDeps,
  creator: PlantCreator,
  { body, owner, requestId, traceparent }: CreateInput,
) {
  const plant = { id: BigInt(body.id), name: body.name, tag: body.tag ?? null }
  const decision = await creator({ type: 'CreatePlant', owner, plant, now: now() }, requestId, traceparent)
  if (decision.outcome === 'created') onAppended?.()
  if (decision.outcome === 'conflict') {
    throw new Failure('CONFLICT', `plant ${plant.id} already exists with a different name or tag`)
  }
  const { name, tag } = decision.plant
  return { plant: tag === null ? { name } : { name, tag }, position: decision.position }
}

type ListInput = { owner: string; limit?: string | number; after?: string }

async function list(
  readPlants: ReadPlants,
  { owner, after, ...query }: ListInput,
  { [POSITION_HEADER]: position, 'if-none-match': ifNoneMatch }: ListHeaders,
) {
  const limit = query.limit === undefined ? undefined : Number(query.limit)
  const from = after === undefined ? undefined : decodeCursor(after)
  if (after !== undefined && from === undefined) {
    throw new Failure('BAD_REQUEST', 'after must be a cursor taken from a next link')
  }
  const tagOf = (version: ListingVersion) => listingTag(version, limit, from)
  const unchanged =
    ifNoneMatch === undefined
      ? undefined
      : (version: ListingVersion) => matchesIfNoneMatch(ifNoneMatch, tagOf(version))
  const listing = await readPlants(
    { owner, limit, from, unchanged },
    position === undefined ? undefined : BigInt(position),
  )
  const validators = {
    etag: tagOf(listing),
    'cache-control': 'private, no-cache',
    'plant-store-position': listing.position.toString(),
  }
  if (listing.kind === 'unchanged') return new Response(null, { status: 304, headers: validators })
  const headers: Record<string, string> = { 'content-type': 'application/json', ...validators }
  const link = nextPageLink(limit, listing.next)
  if (link !== undefined) headers.link = link
  const body = listing.kind === 'page' ? listing.body : jsonArrayStream(listing.batches)
  return new Response(body, { headers })
}
