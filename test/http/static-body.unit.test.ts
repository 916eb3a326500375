import { describe, expect, test } from 'bun:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { preferredCoding, staticBody } from '../../src/http/static-body.ts'

const BYTES = new TextEncoder().encode('<!doctype html>'.repeat(1000))

function served() {
  let loads = 0
  const serve = staticBody(
    async () => {
      loads += 1
      return BYTES
    },
    { contentType: 'text/html; charset=utf-8', cacheControl: 'no-cache' },
  )
  const get = (headers: Record<string, string> = {}) =>
    serve(new Request('http://localhost/docs', { headers }))
  return { get, loads: () => loads }
}

describe('preferredCoding', () => {
  test.each([
    [null, undefined],
    ['', undefined],
    ['identity', undefined],
    ['gzip, deflate, br, zstd', 'br'],
    ['gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0.5, gzip;q=0.8', 'gzip'],
    ['gzip;q=0', undefined],
    ['*', 'br'],
    ['*;q=0', undefined],
    ['gzip, *;q=0', 'gzip'],
    ['deflate', undefined],
  ])('Accept-Encoding %p gives %p', (field, coding) => {
    const chosen: string | undefined = preferredCoding(field)
    expect(chosen).toBe(coding)
  })
})

test('given no Accept-Encoding, when served, then the bytes as they are, with an ETag and Vary', async () => {
  // when
  const answer = await served().get()
  // then
  expect(answer.status).toBe(200)
  expect(answer.headers.get('content-encoding')).toBeNull()
  expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8')
  expect(answer.headers.get('vary')).toBe('Accept-Encoding')
  expect(answer.headers.get('cache-control')).toBe('no-cache')
  expect(answer.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]+"$/)
  expect(new Uint8Array(await answer.arrayBuffer())).toEqual(BYTES)
})

test('given brotli or gzip asked for, when served, then that coding of the same bytes, each with its own ETag', async () => {
  // given
  const { get } = served()
  // when
  const identity = await get()
  const br = await get({ 'accept-encoding': 'gzip, deflate, br' })
  const gzip = await get({ 'accept-encoding': 'gzip' })
  // then
  expect(br.headers.get('content-encoding')).toBe('br')
  expect(new Uint8Array(brotliDecompressSync(await br.arrayBuffer()))).toEqual(BYTES)
  expect(gzip.headers.get('content-encoding')).toBe('gzip')
  expect(new Uint8Array(gunzipSync(await gzip.arrayBuffer()))).toEqual(BYTES)
  const tags = [identity, br, gzip].map((answer) => answer.headers.get('etag'))
  expect(new Set(tags).size).toBe(3)
  expect(br.headers.get('vary')).toBe('Accept-Encoding')
})

test('given the ETag of the coding asked for, when served again, then 304 with no body; another tag gets the body', async () => {
  // given
  const { get } = served()
  const first = await get({ 'accept-encoding': 'br' })
  const tag = first.headers.get('etag') ?? ''
  // when
  const again = await get({ 'accept-encoding': 'br', 'if-none-match': `"other", W/${tag}` })
  const stale = await get({ 'accept-encoding': 'br', 'if-none-match': '"other"' })
  const otherCoding = await get({ 'accept-encoding': 'gzip', 'if-none-match': tag })
  // then
  expect(again.status).toBe(304)
  expect(await again.text()).toBe('')
  expect(again.headers.get('etag')).toBe(tag)
  expect(again.headers.get('vary')).toBe('Accept-Encoding')
  expect(stale.status).toBe(200)
  expect(otherCoding.status).toBe(200)
})

test('given many requests, when served, then the body is loaded once', async () => {
  // given
  const { get, loads } = served()
  // when
  await Promise.all(
    ['br', 'gzip', 'br', 'identity', 'gzip'].map((coding) => get({ 'accept-encoding': coding })),
  )
  // then
  expect(loads()).toBe(1)
})
