import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { createHarness, type Harness, STORAGE_KINDS, TEST_SECRET } from '../support/harness.ts'

// The HTTP API (docs/api.md), through app.handle, on PostgreSQL and on the embedded server.
for (const kind of STORAGE_KINDS) {
  describe(`plants API on ${kind}`, () => {
    let h: Harness
    let alice: string
    let bob: string
    beforeAll(async () => {
      h = await createHarness(kind)
      alice = await h.tokenFor('alice')
      bob = await h.tokenFor('bob')
    })
    afterAll(() => h.close())

    const post = (body: unknown, token = alice, headers: Record<string, string> = {}) =>
      h.request('POST', '/plants', { token, body, headers })
    const list = async (token: string, query = '') => {
      const response = await h.request('GET', `/plants${query}`, { token })
      return { response, plants: response.status === 200 ? ((await response.json()) as unknown[]) : [] }
    }
    async function expectError(response: Response, status: number, messagePart?: string) {
      expect(response.status).toBe(status)
      expect(response.headers.get('content-type')).toStartWith('application/json')
      const body = (await response.json()) as { error: number; message: string }
      expect(Object.keys(body).sort()).toEqual(['error', 'message'])
      expect(body.error).toBe(status)
      expect(body.message.length).toBeGreaterThan(0)
      if (messagePart) expect(body.message).toContain(messagePart)
      return body
    }
    // A rejected request appends no event and projects no row.
    async function expectNothingChanged(act: () => Promise<unknown>) {
      const before = [await h.countEvents(), await h.countPlants()]
      await act()
      expect([await h.countEvents(), await h.countPlants()]).toEqual(before)
    }

    describe('authentication', () => {
      test('no Authorization header is 401 with a Bearer challenge and no error code', async () => {
        const response = await h.request('GET', '/plants')
        await expectError(response, 401, 'bearer token')
        expect(response.headers.get('www-authenticate')).toBe('Bearer realm="plants"')
      })

      test('a rejected token is 401 with error="invalid_token" and says why without echoing the token', async () => {
        const expired = await new SignJWT({ sub: 'alice' })
          .setProtectedHeader({ alg: 'HS256' })
          .setExpirationTime(Math.floor(Date.now() / 1000) - 120)
          .sign(TEST_SECRET)
        const response = await h.request('GET', '/plants', { token: expired })
        const body = await expectError(response, 401, 'expired')
        expect(body.message).not.toContain(expired)
        expect(response.headers.get('www-authenticate')).toStartWith(
          'Bearer realm="plants", error="invalid_token"',
        )
      })

      test('a malformed Authorization header is 401 invalid_token', async () => {
        const response = await h.request('GET', '/plants', {
          headers: { authorization: 'Bearer two tokens' },
        })
        await expectError(response, 401)
        expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"')
      })

      test('the scheme name is case-insensitive', async () => {
        const response = await h.request('GET', '/plants', { headers: { authorization: `bEaReR ${alice}` } })
        expect(response.status).toBe(200)
      })

      test('a token in ?access_token= is not accepted', async () => {
        await expectError(await h.request('GET', `/plants?access_token=${alice}`), 401)
      })

      test('an anonymous caller is refused before the body is looked at, and nothing is stored', async () => {
        await expectNothingChanged(async () => {
          await expectError(await h.request('POST', '/plants', { body: 'not json' }), 401)
          await expectError(await h.request('POST', '/plants', { body: { id: 1, name: 'x' } }), 401)
        })
      })
    })

    describe('creating a plant', () => {
      test('returns the plant without its id, and the caller lists it right away', async () => {
        const response = await post({ id: 1, name: 'Fern', tag: 'green' })
        expect(response.status).toBe(200)
        expect(await response.json()).toEqual({ name: 'Fern', tag: 'green' })
        const { plants } = await list(alice)
        expect(plants).toContainEqual({ name: 'Fern', tag: 'green' })
      })

      test('without a tag, or with "tag": null, the tag is left out; an empty tag is kept', async () => {
        expect(await (await post({ id: 2, name: 'No tag' })).json()).toEqual({ name: 'No tag' })
        expect(await (await post({ id: 3, name: 'Null tag', tag: null })).json()).toEqual({
          name: 'Null tag',
        })
        expect(await (await post({ id: 4, name: 'Empty tag', tag: '' })).json()).toEqual({
          name: 'Empty tag',
          tag: '',
        })
      })

      test('unknown properties are neither stored nor echoed', async () => {
        const response = await post({ id: 5, name: 'Extra', color: 'red', nested: { id: 1 } })
        expect(await response.json()).toEqual({ name: 'Extra' })
        const { plants } = await list(alice)
        expect(plants).toContainEqual({ name: 'Extra' })
      })

      test('ids beyond 2^53 are kept exactly: 2^53 and 2^53+1 are two plants', async () => {
        const body = (id: string, name: string) => `{"id": ${id}, "name": "${name}"}`
        expect((await post(body('9007199254740992', 'Two53'), bob)).status).toBe(200)
        expect((await post(body('9007199254740993', 'Two53+1'), bob)).status).toBe(200)
        // A retry of either is recognised as that very plant, not confused with its neighbour.
        expect((await post(body('9007199254740993', 'Two53+1'), bob)).status).toBe(200)
        await expectError(await post(body('9007199254740993', 'Two53'), bob), 409)
        const { plants } = await list(bob)
        expect(plants).toEqual([{ name: 'Two53' }, { name: 'Two53+1' }])
      })

      test('the int64 bounds are accepted; 7.0 is the integer 7', async () => {
        expect((await post('{"id": -9223372036854775808, "name": "Min"}', bob)).status).toBe(200)
        expect((await post('{"id": 9223372036854775807, "name": "Max"}', bob)).status).toBe(200)
        expect((await post('{"id": 7.0, "name": "Seven"}', bob)).status).toBe(200)
        await expectNothingChanged(async () => {
          expect((await post('{"id": 7, "name": "Seven"}', bob)).status).toBe(200)
        })
      })

      test('text is counted in code points and comes back exactly', async () => {
        const name = '🌵'.repeat(1024)
        const tag = 'ü\u200d🌱 \t"\\/ 漢字'
        const response = await post({ id: 6, name, tag }, bob)
        expect(response.status).toBe(200)
        expect(await response.json()).toEqual({ name, tag })
        expect((await list(bob)).plants).toContainEqual({ name, tag })
      })

      test.each([
        ['id as a string', '{"id": "7", "name": "x"}', 'id'],
        ['a fractional id', '{"id": 1.5, "name": "x"}', 'id'],
        ['an id above int64', '{"id": 9223372036854775808, "name": "x"}', 'id'],
        ['an id below int64', '{"id": -9223372036854775809, "name": "x"}', 'id'],
        ['no id', '{"name": "x"}', 'id'],
        ['a null id', '{"id": null, "name": "x"}', 'id'],
        ['no name', '{"id": 10}', 'name'],
        ['an empty name', '{"id": 10, "name": ""}', 'name'],
        ['a name of 1025 characters', JSON.stringify({ id: 10, name: 'a'.repeat(1025) }), 'name'],
        ['a numeric name', '{"id": 10, "name": 5}', 'name'],
        ['a name with U+0000', '{"id": 10, "name": "a\\u0000b"}', 'name'],
        ['a name with a lone surrogate', '{"id": 10, "name": "a\\ud800b"}', 'name'],
        ['a tag of 1025 characters', JSON.stringify({ id: 10, name: 'x', tag: 'a'.repeat(1025) }), 'tag'],
        ['a numeric tag', '{"id": 10, "name": "x", "tag": 1}', 'tag'],
        ['a tag with a lone surrogate', '{"id": 10, "name": "x", "tag": "\\udfff"}', 'tag'],
        ['an array body', '[{"id": 10, "name": "x"}]', 'object'],
        ['a string body', '"plant"', 'object'],
        ['a null body', 'null', 'object'],
        ['malformed JSON', '{"id": 10, "name": ', 'JSON'],
        ['an empty body', '', 'JSON'],
      ])('%s is 400 naming the problem, and changes nothing', async (_label, body, messagePart) => {
        await expectNothingChanged(async () => {
          await expectError(await post(body), 400, messagePart)
        })
      })

      test('a body that is not UTF-8 is 400 and changes nothing', async () => {
        await expectNothingChanged(async () => {
          const rawBody = new Uint8Array([
            0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x31, 0x2c, 0x22, 0xff, 0x22, 0x7d,
          ])
          const response = await h.request('POST', '/plants', {
            token: alice,
            rawBody,
            headers: { 'content-type': 'application/json' },
          })
          await expectError(response, 400, 'UTF-8')
        })
      })

      test('a body of exactly 64 KiB is accepted; one byte more is 413 and changes nothing', async () => {
        const padded = (size: number) => {
          const start = '{"id": 11, "name": "Big", "pad": "'
          return `${start}${'x'.repeat(size - start.length - 2)}"}`
        }
        expect(new TextEncoder().encode(padded(65_536)).byteLength).toBe(65_536)
        await expectNothingChanged(async () => {
          await expectError(await post(padded(65_537)), 413)
        })
        expect((await post(padded(65_536))).status).toBe(200)
      })

      test('a chunked body over 64 KiB without Content-Length is 413', async () => {
        const chunk = new TextEncoder().encode('x'.repeat(16_384))
        let sent = 0
        const rawBody = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent++ < 5) controller.enqueue(chunk)
            else controller.close()
          },
        })
        const response = await h.request('POST', '/plants', {
          token: alice,
          rawBody,
          headers: { 'content-type': 'application/json' },
        })
        await expectError(response, 413)
      })

      test.each([
        ['text/plain', 415],
        ['application/x-www-form-urlencoded', 415],
        ['application/json; charset=latin1', 415],
        ['application/jsonx', 415],
        ['application/json; charset=utf-8', 200],
        ['Application/JSON;charset=UTF-8', 200],
      ])('Content-Type %s answers %d', async (contentType, status) => {
        const id = 100 + Math.floor(Math.random() * 1_000_000)
        const response = await post({ id, name: 'Typed' }, alice, { 'content-type': contentType })
        if (status === 200) expect(response.status).toBe(200)
        else
          await expectNothingChanged(async () =>
            expectError(await post({ id, name: 'Typed' }, alice, { 'content-type': contentType }), status),
          )
      })

      test('a missing Content-Type is 415', async () => {
        const response = await h.request('POST', '/plants', {
          token: alice,
          rawBody: '{"id": 12, "name": "x"}',
        })
        await expectError(response, 415)
      })
    })

    describe('identity and retries', () => {
      test('re-posting the same plant is 200 with that plant and appends nothing', async () => {
        expect((await post({ id: 20, name: 'Retry', tag: 't' })).status).toBe(200)
        await expectNothingChanged(async () => {
          const response = await post({ id: 20, name: 'Retry', tag: 't' })
          expect(response.status).toBe(200)
          expect(await response.json()).toEqual({ name: 'Retry', tag: 't' })
        })
      })

      test.each([
        ['another name', { id: 21, name: 'Other', tag: 't' }],
        ['another tag', { id: 21, name: 'Orig', tag: 'u' }],
        ['no tag', { id: 21, name: 'Orig' }],
      ])('re-posting an id with %s is 409 and changes nothing', async (_label, changed) => {
        await post({ id: 21, name: 'Orig', tag: 't' })
        await expectNothingChanged(async () => {
          await expectError(await post(changed), 409, '21')
        })
        expect(
          (await list(alice)).plants.filter((plant) => (plant as { name: string }).name === 'Orig'),
        ).toHaveLength(1)
      })

      test('ids are scoped to the owner: two owners may each have plant 30', async () => {
        expect((await post({ id: 30, name: 'Alice 30' })).status).toBe(200)
        expect((await post({ id: 30, name: 'Bob 30' }, bob)).status).toBe(200)
        expect((await list(alice)).plants).toContainEqual({ name: 'Alice 30' })
        expect((await list(alice)).plants).not.toContainEqual({ name: 'Bob 30' })
        expect((await list(bob)).plants).toContainEqual({ name: 'Bob 30' })
      })
    })

    describe('listing', () => {
      let carol: string
      const names = ['c1', 'c2', 'c3', 'c4', 'c5']
      beforeAll(async () => {
        carol = await h.tokenFor('carol')
        for (const [index, name] of names.entries()) await post({ id: 500 - index, name }, carol)
      })

      test("returns only the caller's plants, oldest first", async () => {
        expect((await list(carol)).plants).toEqual(names.map((name) => ({ name })))
        const dave = await h.tokenFor('dave')
        expect((await list(dave)).plants).toEqual([])
      })

      test('limit bounds the page and a Link header leads to the next one', async () => {
        const { response, plants } = await list(carol, '?limit=2')
        expect(plants).toEqual([{ name: 'c1' }, { name: 'c2' }])
        expect(response.headers.get('link')).toMatch(/^<\/plants\?limit=2&after=[A-Za-z0-9_-]+>; rel="next"$/)
      })

      test.each([1, 2, 3, 5, 7])(
        'following next links with limit=%d visits every plant exactly once',
        async (limit) => {
          const seen: unknown[] = []
          let path: string | undefined = `/plants?limit=${limit}`
          for (let pages = 0; path && pages < 10; pages++) {
            const response = await h.request('GET', path, { token: carol })
            const page = (await response.json()) as unknown[]
            expect(page.length).toBeLessThanOrEqual(limit)
            seen.push(...page)
            path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
          }
          expect(seen).toEqual(names.map((name) => ({ name })))
        },
      )

      test('the last page and an unbounded listing carry no Link', async () => {
        expect((await list(carol, '?limit=5')).response.headers.get('link')).toBeNull()
        expect((await list(carol)).response.headers.get('link')).toBeNull()
      })

      test('limit=0 returns an empty page; the largest int32 returns everything', async () => {
        expect((await list(carol, '?limit=0')).plants).toEqual([])
        expect((await list(carol, '?limit=2147483647')).plants).toHaveLength(names.length)
      })

      test.each(['-1', '1.5', 'abc', '', '2147483648', '1e2', '+1', '01', ' 1'])(
        'limit=%p is 400 naming limit',
        async (value) => {
          await expectError((await list(carol, `?limit=${encodeURIComponent(value)}`)).response, 400, 'limit')
        },
      )

      test('limit given twice is 400', async () => {
        await expectError((await list(carol, '?limit=1&limit=2')).response, 400, 'limit')
      })

      test.each(['zzz', '!!', 'cDEuMA', 'cDIuNQ', 'x'.repeat(65)])(
        'a malformed cursor %p is 400',
        async (cursor) => {
          await expectError((await list(carol, `?limit=1&after=${cursor}`)).response, 400, 'after')
        },
      )

      test("a cursor from another owner's page shows only the caller's own plants", async () => {
        const link = (await list(carol, '?limit=1')).response.headers.get('link') ?? ''
        const after = /after=([^>]+)>/.exec(link)?.[1]
        await post({ id: 600, name: 'Bob later' }, bob)
        const { plants } = await list(bob, `?limit=100&after=${after}`)
        expect(plants).toEqual([{ name: 'Bob later' }])
      })
    })

    describe('long listings', () => {
      test('a listing without limit streams every plant across read batches, in order', async () => {
        const erin = await h.tokenFor('erin')
        const total = 2_345
        for (let start = 0; start < total; start += 100) {
          await Promise.all(
            Array.from({ length: Math.min(100, total - start) }, (_, offset) =>
              post({ id: start + offset, name: `p${start + offset}` }, erin),
            ),
          )
        }
        const response = await h.request('GET', '/plants', { token: erin })
        expect(response.status).toBe(200)
        expect(response.headers.get('content-length')).toBeNull()
        const plants = (await response.json()) as { name: string }[]
        expect(plants).toHaveLength(total)
        expect(new Set(plants.map((plant) => plant.name)).size).toBe(total)
        const paged = (await list(erin, '?limit=1500')).plants
        expect(paged).toEqual(plants.slice(0, 1500))
      })
    })

    describe('routing, errors and request ids', () => {
      test('an unknown path is 404 with the Error body', async () => {
        await expectError(await h.request('GET', '/nope'), 404)
      })

      test('a known path with the wrong method is 405 with Allow', async () => {
        const response = await h.request('DELETE', '/plants', { token: alice })
        await expectError(response, 405)
        expect(response.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST'])
      })

      test('a sane client X-Request-Id is echoed, on success and on error', async () => {
        const ok = await h.request('GET', '/plants', {
          token: alice,
          headers: { 'x-request-id': 'trace-123' },
        })
        expect(ok.headers.get('x-request-id')).toBe('trace-123')
        const failed = await h.request('GET', '/plants', { headers: { 'x-request-id': 'trace-456' } })
        expect(failed.headers.get('x-request-id')).toBe('trace-456')
      })

      test.each(['has space', 'x'.repeat(129), 'tab\there'])(
        'an insane X-Request-Id %p is replaced',
        async (sent) => {
          const response = await h.request('GET', '/plants', {
            token: alice,
            headers: { 'x-request-id': sent },
          })
          const id = response.headers.get('x-request-id') ?? ''
          expect(id).not.toBe(sent)
          expect(id).toMatch(/^[\x21-\x7e]{1,128}$/)
        },
      )
    })
  })
}
