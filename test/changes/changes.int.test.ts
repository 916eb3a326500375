import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { issueToken } from '../../src/auth/issue-token.ts'
import { eraseOwner } from '../../src/erasure/erase-owner.ts'
import { createHarness, type Harness, STORAGE_KINDS, TEST_SECRET } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { changesRequest, openSse, plantOf, type SseEvent, type SseReader } from '../support/sse-client.ts'

const BOM = '\uFEFF'
// Ids at the int64 extremes and around 2^53, text a careless decoder or JSON writer would change,
// and a tag that is empty beside one that is absent.
const EXACT_PLANTS = [
  { id: '-9223372036854775808', name: `${BOM}Monstera`, tag: `${BOM}tropical` },
  { id: '9223372036854775807', name: 'line\nbreak\r\nand\rreturn', tag: '' },
  { id: '9007199254740991', name: '\u2028\u2029 separators' },
  { id: '9007199254740992', name: '🌵 astral 𝄞', tag: 'data: not a field\n\nid: 1' },
  { id: '9007199254740993', name: BOM, tag: '\\"quoted"' },
]
// Small enough to reach in a test: a client stalls once 32 KiB of live events wait for it and it
// took nothing for half a second.
const LIMITS = { streamsPerOwner: 5, maxBufferedBytes: 32 * 1024, stallMs: 500 }
// About 6 KB of JSON a plant: six of them pass the bound.
const LARGE = '植'.repeat(1000)

const expectedData = ({ id, name, tag }: { id: string; name: string; tag?: string }) =>
  tag === undefined ? { id, name } : { id, name, tag }

for (const kind of STORAGE_KINDS) {
  describe(`GET /plants/changes on ${kind}`, () => {
    let h: Harness
    const open: SseReader[] = []
    const stream = async (
      token: string | undefined,
      options: { after?: string; lastEventId?: string } = {},
    ) => {
      const reader = await openSse(changesRequest('http://localhost', token, options), (request) =>
        h.app.handle(request),
      )
      open.push(reader)
      return reader
    }
    const create = async (token: string, plant: { id: string | number; name: string; tag?: string }) => {
      // Ids go out as JSON numbers, written by hand so that none is rounded on the way.
      const { id, ...rest } = plant
      const body = `{"id":${id},${JSON.stringify(rest).slice(1)}`
      const response = await h.request('POST', '/plants', {
        token,
        rawBody: body,
        headers: { 'content-type': 'application/json' },
      })
      expect(response.status).toBe(200)
    }
    const openStreams = async () => {
      const text = await (await h.request('GET', '/metrics')).text()
      const value = /^plant_store_change_streams (\d+)$/m.exec(text)?.[1]
      if (value === undefined) throw new Error('/metrics has no plant_store_change_streams')
      return Number(value)
    }

    beforeAll(async () => {
      h = await createHarness(kind, {
        changes: { ...LIMITS, keepAliveMs: 300, tickMs: 50 },
      })
    })
    afterAll(async () => {
      await Promise.all(open.map((reader) => reader.close()))
      await h.close()
    })

    test('opens at once with the SSE headers and a comment, before any event', async () => {
      const reader = await stream(await h.tokenFor('opener'))
      expect(reader.response.status).toBe(200)
      expect(reader.response.headers.get('content-type')).toBe('text/event-stream')
      expect(reader.response.headers.get('cache-control')).toBe('no-store')
      expect(reader.response.headers.get('x-request-id')).toBeTruthy()
      await reader.collectFor(100)
      expect(reader.comments[0]).toBe('connected')
    })

    test('every text and id arrives exactly, live and replayed alike', async () => {
      // given a stream open at the owner's head
      const token = await h.tokenFor('exact')
      const live = await stream(token)
      // when the plants are created
      for (const plant of EXACT_PLANTS) await create(token, plant)
      // then the live stream and a replay from 0 carry the same exact events, in order
      const liveEvents = await live.take(EXACT_PLANTS.length)
      const replayed = await (await stream(token, { after: '0' })).take(EXACT_PLANTS.length)
      for (const events of [liveEvents, replayed]) {
        expect(events.map(plantOf)).toEqual(EXACT_PLANTS.map(expectedData))
        expect(events.every((event) => event.event === 'PlantCreated')).toBe(true)
        expect(events.every((event) => !event.data.includes('\n'))).toBe(true)
      }
      expect(liveEvents.map((event) => event.id)).toEqual(replayed.map((event) => event.id))
      const positions = liveEvents.map((event) => BigInt(event.id ?? ''))
      expect(positions).toEqual([...positions].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
    })

    test('Last-Event-ID wins over after, and leading zeros are accepted', async () => {
      const token = await h.tokenFor('resumer')
      for (let id = 1; id <= 4; id++) await create(token, { id, name: `r${id}` })
      const all = await (await stream(token, { after: '0' })).take(4)
      const second = all[1]?.id ?? ''
      const resumed = await stream(token, { lastEventId: `000${second}`, after: '0' })
      expect((await resumed.take(2)).map(plantOf).map((plant) => plant.name)).toEqual(['r3', 'r4'])
      expect(await resumed.collectFor(200)).toEqual([])
    })

    test('a stream opened without a position sends only plants created after it opened', async () => {
      const token = await h.tokenFor('newcomer')
      await create(token, { id: 1, name: 'before' })
      const reader = await stream(token)
      await create(token, { id: 2, name: 'after' })
      expect((await reader.take(1)).map(plantOf)).toEqual([{ id: '2', name: 'after' }])
      expect(await reader.collectFor(200)).toEqual([])
    })

    test('the seam: a walk of pages while writers run, then after= its last P, misses nothing', async () => {
      // given writers creating plants for one owner
      const token = await h.tokenFor('seam')
      const ids = Array.from({ length: 60 }, (_, index) => index + 1)
      const writing = Promise.all(
        [0, 1, 2].map(async (writer) => {
          for (const id of ids.filter((id) => id % 3 === writer)) await create(token, { id, name: `s${id}` })
        }),
      )
      // when a client walks the listing in pages meanwhile and follows from the last page's P
      await Bun.sleep(20)
      const listed: string[] = []
      let position = ''
      let path: string | undefined = '/plants?limit=7'
      while (path) {
        const response: Response = await h.request('GET', path, { token })
        listed.push(...((await response.json()) as { name: string }[]).map((plant) => plant.name))
        position = response.headers.get('plant-store-position') ?? ''
        path = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
      }
      expect(position).toMatch(/^[0-9]+$/)
      const reader = await stream(token, { after: position })
      await writing
      const streamed = (await reader.collectFor(1000)).map((event) => plantOf(event).name)
      // then every plant is in the listing or the stream, and none twice in the stream
      expect(new Set([...listed, ...streamed])).toEqual(new Set(ids.map((id) => `s${id}`)))
      expect(new Set(streamed).size).toBe(streamed.length)
    })

    test("another owner's plants never appear, across many owners and streams", async () => {
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          // streams of four owners, each from the beginning or from its owner's head when it opens
          fc.array(fc.record({ owner: fc.nat(3), from: fc.constantFrom('0', 'head') }), {
            minLength: 1,
            maxLength: LIMITS.streamsPerOwner,
          }),
          // plants created before the streams open, then after
          fc.array(fc.nat(3), { maxLength: 6 }),
          fc.array(fc.nat(3), { minLength: 1, maxLength: 12 }),
          async (streams, earlier, later) => {
            run++
            const owners = [0, 1, 2, 3].map((owner) => `iso-${run}-${owner}`)
            const tokens = await Promise.all(owners.map((owner) => h.tokenFor(owner)))
            const before = owners.map(() => [] as string[])
            const after = owners.map(() => [] as string[])
            const createAll = async (creates: number[], model: string[][], first: number) => {
              for (const [index, owner] of creates.entries()) {
                const name = `${owners[owner]}/${first + index}`
                await create(tokens[owner] ?? '', { id: first + index, name })
                model[owner]?.push(name)
              }
            }
            await createAll(earlier, before, 1)
            const readers = await Promise.all(
              streams.map(({ owner, from }) => stream(tokens[owner], from === '0' ? { after: '0' } : {})),
            )
            await createAll(later, after, earlier.length + 1)
            for (const [index, { owner, from }] of streams.entries()) {
              const expected = [...(from === '0' ? (before[owner] ?? []) : []), ...(after[owner] ?? [])]
              const reader = readers[index] as SseReader
              const names = [
                ...(await reader.take(expected.length, 5000)),
                ...(await reader.collectFor(50)),
              ].map((event) => plantOf(event).name)
              expect(names).toEqual(expected)
              await reader.close()
            }
          },
        ),
        { numRuns: 15 },
      )
    }, 180_000)

    test('a client that reads slowly but steadily is never cut off, however far behind it falls', async () => {
      // given a live stream read one chunk every 100 ms (each chunk at most 64 KiB)
      const token = await h.tokenFor('slow')
      const response = await h.app.handle(changesRequest('http://localhost', token))
      const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>
      const decoder = new TextDecoder()
      let text = ''
      let failed: unknown
      const count = 80
      const reading = (async () => {
        try {
          while ((text.match(/\nevent: PlantCreated\n/g)?.length ?? 0) < count) {
            const { value, done } = await reader.read()
            if (done) break
            text += decoder.decode(value, { stream: true })
            await Bun.sleep(100)
          }
        } catch (error) {
          failed = error
        }
      })()
      // when plants are created far faster than it reads (more than ten times the bound)
      for (let id = 1; id <= count; id++) await create(token, { id, name: `${id}${LARGE}`, tag: LARGE })
      await reading
      await reader.cancel()
      // then it was never cut off, and got every plant once, in order
      expect(failed).toBeUndefined()
      const names = [...text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1] ?? '').name)
      expect(names).toEqual(Array.from({ length: count }, (_, index) => `${index + 1}${LARGE}`))
    }, 60_000)

    test('a client that stops reading is disconnected once events past the bound wait for it', async () => {
      // given a live stream whose client read the first comment and nothing more
      const before = await openStreams()
      const token = await h.tokenFor('stalled')
      const response = await h.app.handle(changesRequest('http://localhost', token))
      const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>
      await reader.read()
      expect(await openStreams()).toBe(before + 1)
      // when more than the bound is created for it
      for (let id = 1; id <= 12; id++) await create(token, { id, name: `${id}${LARGE}`, tag: LARGE })
      // then, once it took nothing for the stall limit, the stream is released and reset
      const deadline = Date.now() + 15_000
      while ((await openStreams()) > before && Date.now() < deadline) await Bun.sleep(50)
      expect(await openStreams()).toBe(before)
      // (an error without a reason: the runtime resets the connection without logging)
      const ending = await (async () => {
        try {
          while (!(await reader.read()).done);
          return 'ended cleanly'
        } catch {
          return 'reset'
        }
      })()
      expect(ending).toBe('reset')
    }, 30_000)

    describe('one owner holds at most streamsPerOwner open streams', () => {
      const openAll = async (token: string, count: number) =>
        Promise.all(Array.from({ length: count }, () => stream(token)))

      test('one more is a 429 Error with Retry-After, and opens nothing', async () => {
        const token = await h.tokenFor('capped')
        const readers = await openAll(token, LIMITS.streamsPerOwner)
        expect(readers.map((reader) => reader.response.status)).toEqual(readers.map(() => 200))
        const before = await openStreams()
        const response = await h.app.handle(changesRequest('http://localhost', token))
        expect(response.status).toBe(429)
        expect(response.headers.get('content-type')).toBe('application/json')
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
        const body = (await response.json()) as { error: number; message: string }
        expect(body.error).toBe(429)
        expect(body.message).toContain(String(LIMITS.streamsPerOwner))
        expect(await openStreams()).toBe(before)
        for (const reader of readers) await reader.close()
      })

      test('a stream that ends frees its place at once: closed by the client or at token expiry', async () => {
        // given an owner at the cap, one of its streams on a token that expires in seconds
        const token = await h.tokenFor('freed')
        const shortLived = await issueToken(TEST_SECRET, { subject: 'freed', ttlSeconds: 4, now: new Date() })
        const expiring = await stream(shortLived)
        const [closing, ...rest] = await openAll(token, LIMITS.streamsPerOwner - 1)
        expect((await h.app.handle(changesRequest('http://localhost', token))).status).toBe(429)
        // when the client closes one, then a place is free at once
        await closing?.close()
        const reopened = await stream(token)
        expect(reopened.response.status).toBe(200)
        expect((await h.app.handle(changesRequest('http://localhost', token))).status).toBe(429)
        // and when the token of another expires, its place is free as the stream ends
        await expiring.ended()
        expect((await stream(token)).response.status).toBe(200)
        for (const reader of rest) await reader.close()
      })

      test("another owner's streams open while one owner is at the cap", async () => {
        const token = await h.tokenFor('crowded')
        const readers = await openAll(token, LIMITS.streamsPerOwner)
        expect((await h.app.handle(changesRequest('http://localhost', token))).status).toBe(429)
        const other = await stream(await h.tokenFor('uncrowded'))
        expect(other.response.status).toBe(200)
        for (const reader of [...readers, other]) await reader.close()
      })
    })

    test("an erased owner's open streams end, a new one from 0 delivers nothing of theirs", async () => {
      // given: an owner's plants, two streams of theirs (one from 0, one at their head), a stream of
      // an owner who had no key when it opened and then created a plant, and another owner's stream
      const erased = await h.tokenFor('erased')
      const late = await h.tokenFor('erased-later')
      const other = await h.tokenFor('not-erased')
      await create(erased, { id: 1, name: 'Forgotten fern' })
      await create(erased, { id: 2, name: 'Forgotten fig', tag: 'secret' })
      const fromStart = await stream(erased, { after: '0' })
      expect(await fromStart.take(2)).toHaveLength(2)
      const atHead = await stream(erased)
      const keyless = await stream(late)
      await create(late, { id: 7, name: 'First of theirs' })
      expect(await keyless.take(1)).toHaveLength(1)
      const others = await stream(other)
      // when: both are erased (no feed here)
      expect((await eraseOwner(h.db, 'erased')).plants).toBe(2)
      expect((await eraseOwner(h.db, 'erased-later')).plants).toBe(1)
      // then: their streams end, cleanly, saying why
      for (const reader of [fromStart, atHead, keyless]) {
        const ended = await Promise.race([
          reader.ended().then(() => 'ended'),
          Bun.sleep(5000).then(() => 'open'),
        ])
        expect(ended).toBe('ended')
        expect(reader.comments).toContain('the owner has been erased')
      }
      // the other owner's stream goes on
      await create(other, { id: 1, name: 'Kept' })
      expect(plantOf((await others.take(1))[0] as SseEvent)).toEqual({ id: '1', name: 'Kept' })
      // a new stream from 0 delivers nothing of the erased plants, and the same subject starts anew
      const again = await stream(erased, { after: '0' })
      expect(await again.collectFor(300)).toEqual([])
      await create(erased, { id: 1, name: 'A new start' })
      const [fresh] = await again.take(1)
      expect(plantOf(fresh as SseEvent)).toEqual({ id: '1', name: 'A new start' })
      await others.close()
      await again.close()
    })

    test('keep-alive comments arrive while nothing happens', async () => {
      const reader = await stream(await h.tokenFor('quiet'))
      await reader.collectFor(800)
      expect(reader.comments.filter((comment) => comment === 'keep-alive').length).toBeGreaterThanOrEqual(1)
    })

    test('the stream ends when the token expires', async () => {
      const token = await issueToken(TEST_SECRET, { subject: 'shortlived', ttlSeconds: 2, now: new Date() })
      const reader = await stream(token)
      const ended = await Promise.race([
        reader.ended().then(() => 'ended'),
        Bun.sleep(6000).then(() => 'open'),
      ])
      expect(ended).toBe('ended')
      expect(reader.comments).toContain('the token has expired')
    })

    test('gauges the open streams in /metrics', async () => {
      const before = await openStreams()
      const reader = await stream(await h.tokenFor('gauged'))
      expect(await openStreams()).toBe(before + 1)
      await reader.close()
      await Bun.sleep(50)
      expect(await openStreams()).toBe(before)
    })

    describe('bad input is a 400 or 401 Error and opens nothing', () => {
      const cases: [string, { after?: string; lastEventId?: string }, string][] = [
        ['after not a number', { after: 'abc' }, 'after'],
        ['after negative', { after: '-1' }, 'after'],
        ['after a fraction', { after: '1.5' }, 'after'],
        ['after past int64', { after: '9223372036854775808' }, 'after'],
        ['after empty', { after: '' }, 'after'],
        ['Last-Event-ID not a number', { lastEventId: 'x1' }, 'Last-Event-ID'],
        ['Last-Event-ID past int64', { lastEventId: '99999999999999999999' }, 'Last-Event-ID'],
        ['Last-Event-ID empty', { lastEventId: '' }, 'Last-Event-ID'],
      ]
      test.each(cases)('%s', async (_label, options, named) => {
        const before = await openStreams()
        const response = await h.app.handle(
          changesRequest('http://localhost', await h.tokenFor('bad'), options),
        )
        expect(response.status).toBe(400)
        expect(response.headers.get('content-type')).toBe('application/json')
        const body = (await response.json()) as { error: number; message: string }
        expect(body.error).toBe(400)
        expect(body.message).toContain(named)
        expect(await openStreams()).toBe(before)
      })

      test('after given twice', async () => {
        const request = new Request('http://localhost/plants/changes?after=1&after=2', {
          headers: tokenHeader(await h.tokenFor('bad')),
        })
        expect((await h.app.handle(request)).status).toBe(400)
      })

      const tokens: [string, () => Promise<string | undefined>, string][] = [
        ['missing', async () => undefined, 'required'],
        [
          'expired',
          () => issueToken(TEST_SECRET, { subject: 'late', ttlSeconds: -120, now: new Date() }),
          'expired',
        ],
        [
          'forged',
          () =>
            issueToken(new TextEncoder().encode('another-secret-that-is-at-least-32-bytes'), {
              subject: 'mallory',
              ttlSeconds: 60,
              now: new Date(),
            }),
          'signature',
        ],
      ]
      test.each(tokens)('a %s token', async (_label, token, reason) => {
        const response = await h.app.handle(changesRequest('http://localhost', await token(), { after: '0' }))
        expect(response.status).toBe(401)
        expect(response.headers.get('www-authenticate')).toStartWith('Bearer realm="plants"')
        expect(((await response.json()) as { message: string }).message).toContain(reason)
      })
    })
  })
}
