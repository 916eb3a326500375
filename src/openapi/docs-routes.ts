import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Elysia } from 'elysia'
import { buildOpenApiDocument } from './document.ts'

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
<script src="/docs/init.js"></script>
</body>
</html>
`

const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', validatorUrl: null, deepLinking: true })\n`

export function docsRoutes() {
  const document = JSON.stringify(buildOpenApiDocument())
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
  return new Elysia({ name: 'docs' })
    .get('/openapi.json', () => html(document, 'application/json'))
    .get('/docs', () => html(PAGE, 'text/html; charset=utf-8'))
    .get('/docs/init.js', () => html(INIT, 'text/javascript; charset=utf-8'))
    .get('/docs/:asset', async ({ params, set }) => {
      const type = ASSETS[params.asset]
      if (!type) {
        set.status = 404
        return { error: 404, message: `no such path: /docs/${params.asset}` }
      }
      return new Response(await asset(params.asset), {
        headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' },
      })
    })
}
