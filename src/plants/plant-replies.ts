import { Type } from '@sinclair/typebox'
import {
  errorReply,
  replies,
  reply,
  retryAfter,
  unauthorized,
  unavailable,
  unexpected,
} from '../openapi/replies.ts'
import { PlantView, Position } from './schemas.ts'

// What POST /plants and GET /plants answer, as the routes declare it (and so the OpenAPI document).
export const created = replies({
  200: reply(PlantView, 'The plant response', {
    headers: {
      'Plant-Store-Position': {
        schema: Position,
        description:
          "The position of the plant's event; send the highest one received on GET /plants to see your writes",
      },
    },
  }),
  400: errorReply('The body breaks a rule; the message names the field and the rule'),
  401: unauthorized,
  409: errorReply('The caller already has this id with a different name or tag'),
  408: errorReply('The body stopped arriving before it was complete; the connection is closed'),
  413: errorReply('The body is larger than 65536 bytes'),
  415: errorReply('Content-Type is not application/json'),
  500: unexpected,
  503: errorReply('The database is unreachable, or has no room left to write', retryAfter),
})

const listingHeaders = {
  ETag: {
    schema: Type.String(),
    description: "Strong tag of this listing: it changes exactly when the caller's plants change",
  },
  'Cache-Control': {
    schema: Type.Literal('private, no-cache'),
    description: 'Revalidate with If-None-Match',
  },
  'Plant-Store-Position': {
    schema: Type.String({ pattern: '^[0-9]+$' }),
    description:
      "Position of the caller's latest plant as this read saw it (0 when none): GET /plants/changes?after= it misses nothing",
  },
}

export const listed = replies({
  200: reply(Type.Array(PlantView), "The caller's plants", {
    headers: {
      Link: { schema: Type.String(), description: 'rel="next" link when more plants follow' },
      ...listingHeaders,
    },
  }),
  304: reply(Type.Null(), "If-None-Match matched: the caller's copy is current (no body)", {
    contentType: null,
    headers: listingHeaders,
  }),
  400: errorReply('A bad limit, after or Plant-Store-Position'),
  401: unauthorized,
  500: unexpected,
  503: unavailable,
})
