import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { Failure } from '../shared/errors.ts'
import { buildOpenApiDocument, type DocumentedRoute, type NamedSchemas } from './document.ts'
import { type DocumentedResponses, errorReply, replies, reply } from './replies.ts'

// The reference page works offline: Swagger UI's files come from the swagger-ui-dist package
// and are served by the service itself.
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
}

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

const documentReply = replies({
  200: reply(Type.Object({}, { additionalProperties: true }), 'This OpenAPI 3.1 document'),
})
const asyncApiReply = replies({
  200: reply(Type.Object({}, { additionalProperties: true }), 'The AsyncAPI 3.0 document of the event feed'),
})
const pageReply = replies({
  200: reply(Type.String(), 'The API reference page', { contentType: 'text/html' }),
})
const assetReply = replies({
  200: reply(Type.String(), 'A Swagger UI file', { contentType: 'application/octet-stream' }),
  404: errorReply('No such file'),
})

// `routes` is read on the first request, when every route of the app is registered. `asyncApi` is
// the feed's document (feed/asyncapi-document.ts), served beside the API's.
export function docsRoutes(
  routes: () => readonly DocumentedRoute[],
  schemas: NamedSchemas,
  asyncApiDocument: unknown,
) {
  let document: string | undefined
  const openApiDocument = () => {
    document ??= JSON.stringify(buildOpenApiDocument(routes(), schemas))
    return document
  }
  const asyncApi = JSON.stringify(asyncApiDocument)
  const assetDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/swagger-ui-bundle.js'))
  const cache = new Map<string, Promise<Blob>>()
  const asset = (name: string) => {
    const cached = cache.get(name)
    if (cached) return cached
    const bytes = readFile(join(assetDir, name)).then((data) => new Blob([data]))
    cache.set(name, bytes)
    return bytes
  }
  const html = (body: string, type: string) => new Response(body, { headers: { 'content-type': type } })
  const detail = (operationId: string, summary: string, responses: DocumentedResponses, hide = false) => ({
    operationId,
    summary,
    tags: ['docs'],
    responses,
    hide,
  })
  return new Elysia({ name: 'docs' })
    .get('/openapi.json', () => html(openApiDocument(), 'application/json'), {
      response: documentReply.response,
      detail: detail('getOpenApiDocument', 'The OpenAPI document', documentReply.responses),
    })
    .get('/asyncapi.json', () => html(asyncApi, 'application/json'), {
      response: asyncApiReply.response,
      detail: detail(
        'getAsyncApiDocument',
        'The AsyncAPI document of the event feed',
        asyncApiReply.responses,
      ),
    })
    .get('/docs', () => html(PAGE, 'text/html; charset=utf-8'), {
      response: pageReply.response,
      detail: detail('getApiReference', 'The API reference', pageReply.responses),
    })
    .get(
      '/docs/:asset',
      async ({ params }) => {
        const type = ASSETS[params.asset]
        if (!type) throw new Failure('NOT_FOUND', `no such path: /docs/${params.asset}`)
        return new Response(await asset(params.asset), {
          headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' },
        })
      },
      {
        params: Type.Object({ asset: Type.String() }),
        response: assetReply.response,
        detail: detail('getDocsAsset', 'A Swagger UI file', assetReply.responses, true),
      },
    )
}
