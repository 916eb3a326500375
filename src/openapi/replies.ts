import { type TSchema, Type } from '@sinclair/typebox'
import { ErrorBody } from '../http/error-body.ts'

export type ResponseHeader = { schema: TSchema; description: string }

// One status a route answers: the body schema Elysia validates with and Eden types, and what the
// OpenAPI document says beside it.
export type Reply<Body extends TSchema = TSchema> = {
  body: Body
  description: string
  // null: the status has no body (304).
  contentType?: string | null
  headers?: Record<string, ResponseHeader>
}

export const RequestIdHeader: ResponseHeader = {
  schema: Type.String({ maxLength: 128 }),
  description: 'The request id, echoed or generated',
}

export function reply<Body extends TSchema>(
  body: Body,
  description: string,
  more: Pick<Reply, 'contentType' | 'headers'> = {},
): Reply<Body> {
  return { body, description, ...more }
}

export function errorReply(description: string, headers: Record<string, ResponseHeader> = {}) {
  return reply(ErrorBody, description, { headers: { 'X-Request-Id': RequestIdHeader, ...headers } })
}

export const unauthorized = errorReply('Missing, malformed or rejected bearer token', {
  'WWW-Authenticate': {
    schema: Type.String(),
    description: 'Bearer realm="plants"[, error="invalid_token"]',
  },
})
export const retryAfter = {
  'Retry-After': { schema: Type.Integer(), description: 'Seconds to wait before retrying' },
}
export const unavailable = errorReply('The database is unreachable', retryAfter)
export const unexpected = errorReply('Unexpected error; the message carries the request id')

export type DocumentedResponses = Record<string, DocumentedResponse>

type DocumentedResponse = {
  description: string
  headers?: Record<string, ResponseHeader>
  content?: Record<string, Record<string, never>>
}

// A route's replies split the way Elysia takes them: `response` (status to body schema) for the
// route, `responses` (description, headers, media type) for its `detail`; the OpenAPI document
// joins them again (document.ts).
export function replies<Declared extends Record<number, Reply>>(declared: Declared) {
  const response: Record<string, TSchema> = {}
  const responses: DocumentedResponses = {}
  for (const [status, { body, description, contentType = 'application/json', headers }] of Object.entries(
    declared,
  )) {
    response[status] = body
    responses[status] = {
      description,
      ...(headers && { headers }),
      ...(contentType !== null && { content: { [contentType]: {} } }),
    }
  }
  return {
    response: response as {
      [Status in keyof Declared]: Declared[Status] extends Reply<infer Body> ? Body : never
    },
    responses,
  }
}
