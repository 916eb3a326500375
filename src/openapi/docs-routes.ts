import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { staticBody } from '../http/static-body.ts'
import { Failure } from '../shared/errors.ts'
import { buildOpenApiDocument, type DocumentedRoute, type NamedSchemas } from './document.ts'
import { type DocumentedResponses, errorReply, replies, reply } from './replies.ts'

// The reference page works offline: Swagger UI's files come from the swagger-ui-dist package
// and are served by the service itself.
const ASSETS = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
} as const

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Plant Store API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', validatorUrl: null, deepLinking: true })</script>
</body>
</html>
`

// A copy a client holds is current (If-None-Match matched its ETag): no body.
const notModified = reply(Type.Null(), 'If-None-Match matched: the copy held is current (no body)', {
  contentType: null,
})
const documentReply = replies({
  200: reply(Type.Object({}, { additionalProperties: true }), 'This OpenAPI 3.1 document'),
  304: notModified,
})
const asyncApiReply = replies({
  200: reply(Type.Object({}, { additionalProperties: true }), 'The AsyncAPI 3.0 document of the event feed'),
  304: notModified,
})
const pageReply = replies({
  200: reply(Type.String(), 'The API reference page', { contentType: 'text/html' }),
  304: notModified,
})
const assetReply = replies({
  200: reply(Type.String(), 'A Swagger UI file', { contentType: 'application/octet-stream' }),
  304: notModified,
  404: errorReply('No such file'),
})

// The page reloads for the cost of a 304 each (http/static-body.ts); the documents are checked
// again on each load, Swagger UI's files kept for a day.
const REVALIDATE = 'no-cache'
const KEEP_A_DAY = 'public, max-age=86400'

// `routes` is read on the first request, when every route of the app is registered. `asyncApi` is
// the feed's document (feed/asyncapi-document.ts), served beside the API's.
export function docsRoutes(
  routes: () => readonly DocumentedRoute[],
  schemas: NamedSchemas,
  asyncApiDocument: unknown,
) {
  const text = (value: string) => async () => new TextEncoder().encode(value)
  const json = { contentType: 'application/json', cacheControl: REVALIDATE }
  const openApi = staticBody(
    async () => new TextEncoder().encode(JSON.stringify(buildOpenApiDocument(routes(), schemas))),
    json,
  )
  const asyncApi = staticBody(text(JSON.stringify(asyncApiDocument)), json)
  const page = staticBody(text(PAGE), { contentType: 'text/html; charset=utf-8', cacheControl: REVALIDATE })
  const assetDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/swagger-ui-bundle.js'))
  const assets = new Map(
    Object.entries(ASSETS).map(([name, contentType]) => [
      name,
      staticBody(() => readFile(join(assetDir, name)), {
        contentType,
        cacheControl: KEEP_A_DAY,
      }),
    ]),
  )
  const detail = (operationId: string, summary: string, responses: DocumentedResponses, hide = false) => ({
    operationId,
    summary,
    tags: ['docs'],
    responses,
    hide,
  })
  return new Elysia({ name: 'docs' })
    .get('/openapi.json', ({ request }) => openApi(request), {
      response: documentReply.response,
      detail: detail('getOpenApiDocument', 'The OpenAPI document', documentReply.responses),
    })
    .get('/asyncapi.json', ({ request }) => asyncApi(request), {
      response: asyncApiReply.response,
      detail: detail(
        'getAsyncApiDocument',
        'The AsyncAPI document of the event feed',
        asyncApiReply.responses,
      ),
    })
    .get('/docs', ({ request }) => page(request), {
      response: pageReply.response,
      detail: detail('getApiReference', 'The API reference', pageReply.responses),
    })
    .get(
      '/docs/:asset',
      ({ params, request }) => {
        const asset = assets.get(params.asset)
        if (!asset) throw new Failure('NOT_FOUND', `no such path: /docs/${params.asset}`)
        return asset(request)
      },
      {
        params: Type.Object({ asset: Type.String() }),
        response: assetReply.response,
        detail: detail('getDocsAsset', 'A Swagger UI file', assetReply.responses, true),
      },
    )
}
