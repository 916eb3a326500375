import { Type } from '@sinclair/typebox'
import { ChangesHeaders, ChangesQuery } from '../changes/routes.ts'
import { ErrorBody, ListQuery, NewPlant, Plant } from '../plants/schemas.ts'
import { toJsonSchema } from './json-schema.ts'

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const errorResponse = (description: string, headers: Record<string, unknown> = {}) => ({
  description,
  headers: { 'X-Request-Id': { $ref: '#/components/headers/RequestId' }, ...headers },
  content: { 'application/json': { schema: ref('Error') } },
})
const unauthorized = errorResponse('Missing, malformed or rejected bearer token', {
  'WWW-Authenticate': {
    schema: { type: 'string' },
    description: 'Bearer realm="plants"[, error="invalid_token"]',
  },
})
const unavailable = errorResponse('The database is unreachable', {
  'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait before retrying' },
})
const unexpected = errorResponse('Unexpected error; the message carries the request id')

// The OpenAPI 3.1 document of the API, built from the TypeBox schemas the routes validate with.
export function buildOpenApiDocument() {
  const limit = toJsonSchema(ListQuery.properties.limit)
  const after = toJsonSchema(ListQuery.properties.after)
  return {
    openapi: '3.1.0',
    info: {
      title: 'Plant Store',
      version: '1.0.0',
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'Create and list plants. Every error is {"error": status, "message": text}; an unknown path is 404 and a known path with the wrong method is 405 with an Allow header.',
    },
    security: [{ bearerAuth: [] }],
    paths: {
      '/plants': {
        post: {
          operationId: 'createPlant',
          summary: 'Create a plant',
          requestBody: { required: true, content: { 'application/json': { schema: ref('NewPlant') } } },
          responses: {
            200: {
              description: 'The plant response',
              content: { 'application/json': { schema: ref('Plant') } },
            },
            400: errorResponse('The body breaks a rule; the message names the field and the rule'),
            401: unauthorized,
            409: errorResponse('The caller already has this id with a different name or tag'),
            413: errorResponse('The body is larger than 65536 bytes'),
            415: errorResponse('Content-Type is not application/json'),
            500: unexpected,
            503: unavailable,
          },
        },
        get: {
          operationId: 'listPlants',
          summary: "List the caller's plants, oldest first",
          parameters: [
            {
              name: 'limit',
              in: 'query',
              required: false,
              description: 'Maximum number of plants',
              schema: limit,
            },
            {
              name: 'after',
              in: 'query',
              required: false,
              description: 'Cursor from a next link',
              schema: after,
            },
          ],
          responses: {
            200: {
              description: "The caller's plants",
              headers: {
                Link: { schema: { type: 'string' }, description: 'rel="next" link when more plants follow' },
                'Plant-Store-Position': {
                  schema: { type: 'string', pattern: '^[0-9]+$' },
                  description:
                    "The caller's latest plant's position as this read saw it (0 when none): GET /plants/changes?after= it misses nothing",
                },
              },
              content: { 'application/json': { schema: { type: 'array', items: ref('Plant') } } },
            },
            400: errorResponse('A bad limit or after parameter'),
            401: unauthorized,
            500: unexpected,
            503: unavailable,
          },
        },
      },
      '/plants/changes': {
        get: {
          operationId: 'followPlantChanges',
          summary: "Follow the caller's new plants as server-sent events",
          description:
            'text/event-stream: each plant created for the caller is an event with id (its position), event PlantCreated and one line of JSON data {"id": decimal string, "name", "tag"?}. Starts after Last-Event-ID, else after `after`, else at the caller\'s head; comment lines keep it alive; it ends when the token expires.',
          parameters: [
            {
              name: 'after',
              in: 'query',
              required: false,
              description: ChangesQuery.properties.after.description,
              schema: toJsonSchema(ChangesQuery.properties.after),
            },
            {
              name: 'Last-Event-ID',
              in: 'header',
              required: false,
              description: ChangesHeaders.properties['last-event-id'].description,
              schema: toJsonSchema(ChangesHeaders.properties['last-event-id']),
            },
          ],
          responses: {
            200: {
              description: 'The stream of events',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            400: errorResponse('A malformed Last-Event-ID or after'),
            401: unauthorized,
            500: unexpected,
            503: unavailable,
          },
        },
      },
      '/health': publicOperation('Liveness', statusSchema('ok')),
      '/ready': {
        get: {
          ...publicOperation('Readiness: the database answers', statusSchema('ready')).get,
          responses: {
            200: { description: 'Ready', content: { 'application/json': { schema: statusSchema('ready') } } },
            503: unavailable,
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          security: [],
          responses: {
            200: {
              description: 'Prometheus text exposition',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        },
      },
    },
    components: {
      schemas: {
        Plant: toJsonSchema(Plant),
        NewPlant: toJsonSchema(NewPlant),
        Error: toJsonSchema(ErrorBody),
      },
      headers: {
        RequestId: {
          schema: { type: 'string', maxLength: 128 },
          description: 'The request id, echoed or generated',
        },
      },
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  }
}

function statusSchema(status: string) {
  return toJsonSchema(Type.Object({ status: Type.Literal(status) }))
}

function publicOperation(summary: string, schema: Record<string, unknown>) {
  return {
    get: {
      summary,
      security: [],
      responses: { 200: { description: summary, content: { 'application/json': { schema } } } },
    },
  }
}
