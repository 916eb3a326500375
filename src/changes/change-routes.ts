import { type Static, Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { authentication } from '../auth/authentication.ts'
import { BearerHeaders } from '../auth/bearer-headers.ts'
import type { TokenVerifier } from '../auth/token-verifier.ts'
import {
  errorReply,
  replies,
  reply,
  retryAfter,
  unauthorized,
  unavailable,
  unexpected,
} from '../openapi/replies.ts'
import { Failure } from '../shared/errors.ts'
import type { Changes } from './changes-service.ts'
import { POSITION_RULE, parsePosition } from './position.ts'

export type ChangeRoutesDeps = { verifyToken: TokenVerifier; changes?: Changes }

// A position arrives as a string; its type also admits a bigint, which typed clients (Eden) send
// as its digits. Never a number: positions pass 2^53, where a number loses digits.
const Position = (name: string, description: string) =>
  Type.Unsafe<string | bigint>(
    Type.String({ pattern: '^[0-9]+$', description, error: `${name} ${POSITION_RULE}` }),
  )

// One event of the stream as the typed client reads it (client.ts): its id, the event's position in
// the log, and its data, the plant with its id; all of them exact, as decimal strings.
export const ChangeEvent = Type.Object({
  id: Type.String({ description: "The event's position in the log, in decimal" }),
  event: Type.Literal('PlantCreated'),
  data: Type.Object({
    id: Type.String({ description: "The plant's id, in decimal" }),
    name: Type.String(),
    tag: Type.Optional(Type.String()),
  }),
})

export const ChangesQuery = Type.Object({
  after: Type.Optional(
    Position('after', 'Start after this position (a Plant-Store-Position or an event id)'),
  ),
})

export const ChangesHeaders = BearerHeaders({
  'last-event-id': Type.Optional(Position('Last-Event-ID', 'Resume after this event id; wins over after')),
})

const EVENT_STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-store' }

const followed = replies({
  // Typed as what the typed client makes of it; documented as the text it is.
  200: reply(
    Type.Unsafe<AsyncGenerator<Static<typeof ChangeEvent>, void, unknown>>(
      Type.String({
        description:
          'Server-sent events: per plant created for the caller, `id: <position>`, `event: PlantCreated` and `data:` one line of JSON {"id": decimal string, "name", "tag"?}; comment lines keep it alive; it ends when the token expires',
      }),
    ),
    "The caller's new plants, as they are created",
    { contentType: 'text/event-stream' },
  ),
  400: errorReply('A malformed Last-Event-ID or after'),
  401: unauthorized,
  429: errorReply('The caller already holds as many open change streams as allowed here', retryAfter),
  500: unexpected,
  503: unavailable,
})

// GET /plants/changes (docs/live-changes.md): the caller's new plants as server-sent events.
export function changeRoutes({ verifyToken, changes }: ChangeRoutesDeps) {
  return new Elysia({ name: 'changes' }).use(authentication(verifyToken)).get(
    '/plants/changes',
    async ({ owner, tokenExpiresAt, query, headers, request }) => {
      // The schema checks one value; only the raw query tells that `after` was given twice.
      if (new URL(request.url).searchParams.getAll('after').length > 1)
        throw new Failure('BAD_REQUEST', `after ${POSITION_RULE}`)
      const after = startPosition(headers['last-event-id'], query.after)
      if (!changes)
        throw new Failure('UNAVAILABLE', 'live changes are not running here', { 'retry-after': '5' })
      const body = await changes.open({ owner, after, expiresAt: tokenExpiresAt })
      return new Response(body, { headers: EVENT_STREAM_HEADERS })
    },
    {
      query: ChangesQuery,
      headers: ChangesHeaders,
      response: followed.response,
      detail: {
        operationId: 'followPlantChanges',
        summary: "Follow the caller's new plants as server-sent events",
        tags: ['plants'],
        responses: followed.responses,
      },
    },
  )
}

type PositionInput = string | bigint | undefined

function startPosition(lastEventId: PositionInput, after: PositionInput): bigint | undefined {
  const [name, given] = lastEventId !== undefined ? ['Last-Event-ID', lastEventId] : ['after', after]
  if (given === undefined) return undefined
  const position = parsePosition(String(given))
  if (position === undefined) throw new Failure('BAD_REQUEST', `${name} ${POSITION_RULE}`)
  return position
}
