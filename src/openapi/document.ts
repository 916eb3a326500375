import { Type } from '@sinclair/typebox'
import { ErrorBody, ListQuery, NewPlant, Plant, Position } from '../plants/schemas.ts'
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
  const position = toJsonSchema(Position)
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
              headers: {
                'Plant-Store-Position': {
                  schema: position,
                  description:
                    "The position of the plant's event; send the highest one received on GET /plants to see your writes",
                },
              },
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
            {
              name: 'Plant-Store-Position',
              in: 'header',
              required: false,
              description:
                'The highest position a create answered you: the listing shows every plant created up to it, wherever it is read',
              schema: position,
            },
          ],
          responses: {
            200: {
              description: "The caller's plants",
              headers: {
                Link: { schema: { type: 'string' }, description: 'rel="next" link when more plants follow' },
              },
              content: { 'application/json': { schema: { type: 'array', items: ref('Plant') } } },
            },
            400: errorResponse('A bad limit, after or Plant-Store-Position'),
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
