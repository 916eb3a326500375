import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Ajv2020 from 'ajv/dist/2020'
import type { DatabaseHandle } from '../../src/database/database.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { type TestApp, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'

type Doc = {
  openapi: string
  info: { version: string; license: { name: string; identifier?: string } }
  components: { schemas: Record<string, Record<string, unknown>>; securitySchemes: Record<string, unknown> }
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; schema: unknown }[]
        security?: unknown[]
        responses: Record<
          string,
          { content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }
        >
      }
    >
  >
  security: unknown[]
}

let handle: DatabaseHandle
let app: TestApp['app']
let doc: Doc
let token: string
beforeAll(async () => {
  handle = await openStorage({ kind: 'memory' })
  const started = testApp({ db: handle.db, keyring: handle.keyring })
  app = started.app
  doc = (await (await app.handle(new Request('http://localhost/openapi.json'))).json()) as Doc
  token = await started.tokenFor('otto', 600)
})
afterAll(() => handle.close())

describe('GET /openapi.json', () => {
  test('is OpenAPI 3.1, version 1.0.0 under the MIT licence, with the bearer scheme on the whole API', () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('1.0.0')
    expect(doc.info.license).toMatchObject({ name: 'MIT', identifier: 'MIT' })
    expect(doc.components.securitySchemes.bearerAuth).toEqual({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    })
    expect(doc.security).toEqual([{ bearerAuth: [] }])
    expect(doc.paths['/health']?.get?.security).toEqual([])
  })

  test('names its servers, and every operation has a unique operationId and a summary', () => {
    const full = doc as Doc & { servers?: { url: string }[] }
    expect(full.servers?.length).toBeGreaterThan(0)
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        at: `${method.toUpperCase()} ${path}`,
        ...(operation as { operationId?: string; summary?: string }),
      })),
    )
    const ats = operations.map(({ at }) => at)
    for (const at of [
      'GET /health',
      'GET /ready',
      'GET /metrics',
      'GET /openapi.json',
      'GET /docs',
      'GET /plants/changes',
    ])
      expect(ats).toContain(at)
    for (const { at, operationId, summary } of operations) {
      expect({ at, operationId: typeof operationId, summary: typeof summary }).toEqual({
        at,
        operationId: 'string',
        summary: 'string',
      })
    }
    expect(new Set(operations.map(({ operationId }) => operationId)).size).toBe(operations.length)
  })

  test('has the spec shapes: Plant, NewPlant with a required int64 id, Error with an int32 error', () => {
    const { Plant, NewPlant, Error: ErrorShape } = doc.components.schemas
    expect(Plant).toMatchObject({
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, tag: { type: 'string' } },
    })
    expect(NewPlant).toMatchObject({
      type: 'object',
      properties: {
        id: { type: 'integer', format: 'int64' },
        name: { type: 'string', minLength: 1, maxLength: 1024 },
      },
    })
    expect(NewPlant?.required).toEqual(expect.arrayContaining(['id', 'name']))
    expect(NewPlant?.required).not.toContain('tag')
    expect(ErrorShape).toMatchObject({
      type: 'object',
      required: ['error', 'message'],
      properties: { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } },
    })
    expect(JSON.stringify(doc)).not.toMatch(/"error":"|Kind|"Int64"|"Text"/)
  })

  test('names limit as an int32 query parameter and every status docs/api.md gives each operation', () => {
    const limit = doc.paths['/plants']?.get?.parameters?.find((parameter) => parameter.name === 'limit')
    expect(limit?.schema).toMatchObject({ type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647 })
    expect(Object.keys(doc.paths['/plants']?.post?.responses ?? {}).sort()).toEqual([
      '200',
      '400',
      '401',
      '408',
      '409',
      '413',
      '415',
      '500',
      '503',
    ])
    expect(Object.keys(doc.paths['/plants']?.get?.responses ?? {}).sort()).toEqual([
      '200',
      '304',
      '400',
      '401',
      '500',
      '503',
    ])
    expect(Object.keys(doc.paths['/ready']?.get?.responses ?? {}).sort()).toEqual(['200', '503'])
  })

  test('declares the conditional listing: If-None-Match, and a 304 without content carrying the validators', () => {
    const get = doc.paths['/plants']?.get
    expect(get?.parameters?.map((parameter) => parameter.name)).toContain('if-none-match')
    for (const status of ['200', '304']) {
      expect(Object.keys(get?.responses[status]?.headers ?? {})).toEqual(
        expect.arrayContaining(['ETag', 'Cache-Control', 'Plant-Store-Position']),
      )
    }
    expect(get?.responses['304']?.content).toBeUndefined()
  })
})

describe('real responses match the document', () => {
  const validatorFor = (path: string, method: string, status: number) => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false })
    ajv.addSchema({ $id: 'doc', components: doc.components })
    const schema = doc.paths[path]?.[method]?.responses[String(status)]?.content?.['application/json']?.schema
    expect(schema).toBeDefined()
    return ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')))
  }

  const cases: [string, string, RequestInit, number][] = [
    [
      '/plants',
      'post',
      { method: 'POST', body: '{"id": 9007199254740993, "name": "Ficus", "tag": "tree"}' },
      200,
    ],
    ['/plants', 'post', { method: 'POST', body: '{"id": "7", "name": "x"}' }, 400],
    ['/plants', 'post', { method: 'POST', body: '{"id": 9007199254740993, "name": "Other"}' }, 409],
    ['/plants', 'post', { method: 'POST', body: 'x'.repeat(70_000) }, 413],
    ['/plants', 'post', { method: 'POST', body: '{}', headers: { 'content-type': 'text/plain' } }, 415],
    ['/plants', 'get', {}, 200],
    ['/plants?limit=-1', 'get', {}, 400],
    ['/ready', 'get', {}, 200],
    ['/health', 'get', {}, 200],
  ]

  test.each(cases)('%s %s %o answers %d in the documented shape', async (path, method, init, status) => {
    const headers = {
      ...tokenHeader(token),
      'content-type': 'application/json',
      ...(init.headers as object),
    }
    const response = await app.handle(new Request(`http://localhost${path}`, { ...init, headers }))
    expect(response.status).toBe(status)
    const validate = validatorFor(path.split('?')[0] as string, method, status)
    const body = await response.json()
    expect(validate(body) ? [] : validate.errors).toEqual([])
  })

  test('a 401 matches the documented Error', async () => {
    const response = await app.handle(new Request('http://localhost/plants'))
    const validate = validatorFor('/plants', 'get', 401)
    expect(validate(await response.json())).toBe(true)
  })
})
