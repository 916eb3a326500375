import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createHarness, type Harness } from '../support/harness.ts'
import { changesRequest, openSse, plantOf, type SseReader } from '../support/sse-client.ts'

// Small enough for a burst of a few plants to fill: a stream holds 16 KiB of live events.
const LIMITS = { maxBufferedBytes: 16 * 1024, stallMs: 60_000, catchUpBatch: 100 }
// About 1 KB of event text each.
const nameOf = (id: number) => `${id} `.padEnd(1000, 'x')

// Live changes (docs/live-changes.md), no gap: a stream that is catching up holds the live events that arrive meanwhile
// and sends them once its read is done. A burst of them (what an import's commit releases: every
// plant created while it ran) may be nearly as large as the bound; with the catch-up's own events
// it passes the bound as it goes live. Each step is held where it must be by a lock the test
// takes, so the burst lands inside the catch-up every time.
describe('a change stream that goes live as a burst arrives (PostgreSQL)', () => {
  let h: Harness
  let sql: postgres.Sql
  const readers: SseReader[] = []
  beforeAll(async () => {
    h = await createHarness('postgres', { changes: LIMITS })
    sql = postgres(h.databaseUrl as string, { max: 4, onnotice: () => {} })
  })
  afterAll(async () => {
    await Promise.all(readers.map((reader) => reader.close()))
    await sql.end()
    await h.close()
  })
  const create = async (token: string, id: number) => {
    const response = await h.request('POST', '/plants', { token, body: { id, name: nameOf(id) } })
    expect(response.status).toBe(200)
  }
  const stream = async (token: string, after?: string) => {
    const reader = await openSse(changesRequest('http://localhost', token, { after }), (request) =>
      h.app.handle(request),
    )
    readers.push(reader)
    return reader
  }
  const waitsOnPlants = async () =>
    (await sql`select 1 from pg_locks where relation = 'plants'::regclass and not granted`).length > 0

  test('every plant arrives once, in order: the old ones read, and the burst held meanwhile', async () => {
    // given: the owner's earlier plants, and a stream of another owner that tells when the
    // follower has read the log up to a plant created last
    const owner = await h.tokenFor('bursty')
    const earlier = [1, 2, 3, 4, 5]
    for (const id of earlier) await create(owner, id)
    const signalToken = await h.tokenFor('signal')
    const signal = await stream(signalToken)
    // and a writer that holds the log's horizon: what commits from here is read once it ends
    const horizon = await sql.reserve()
    await horizon`begin`
    await horizon`insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      values ('held:1', 1, 'Held', 1, '{}', '{"pseudonym": "00000000000000000000000000000000"}', now())`
    // and a burst of the owner's plants, acknowledged meanwhile (14 KB: just below the bound)
    const burst = Array.from({ length: 14 }, (_, index) => 100 + index)
    for (const id of burst) await create(owner, id)
    await create(signalToken, 1)
    // when: the owner's stream opens from the beginning, its first read held by a lock on the
    // projection, and the burst reaches it during that read
    const projection = await sql.reserve()
    await projection`begin`
    await projection`lock table plants in access exclusive mode`
    const opening = stream(owner, '0')
    while (!(await waitsOnPlants())) await Bun.sleep(10)
    await horizon`rollback`
    horizon.release()
    expect(await signal.take(1)).toHaveLength(1)
    await projection`commit`
    projection.release()
    // then
    const reader = await opening
    const events = await reader.take(earlier.length + burst.length, 10_000)
    expect(events.map((event) => Number(plantOf(event).id))).toEqual([...earlier, ...burst])
    expect(await reader.collectFor(300)).toEqual([])
  }, 60_000)
})
