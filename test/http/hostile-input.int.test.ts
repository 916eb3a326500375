import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { rowsOf } from '../../src/database/database.ts'
import { ErrorBody } from '../../src/http/error-body.ts'
import { createHarness, type Harness } from '../support/harness.ts'
import { type HostileRequest, hostileRequest, tamperToken } from '../support/hostile-requests.ts'

// At least 10,000 generated requests per run; each one is checked against every invariant.
const RUNS = 10_000

let h: Harness
let requests: fc.Arbitrary<HostileRequest>
beforeAll(async () => {
  h = await createHarness('postgres')
  const valid = await Promise.all(['alice', 'bob', 'x'.repeat(255), 'ünï 🌱'].map((sub) => h.tokenFor(sub)))
  requests = hostileRequest({ valid, tamper: tamperToken })
})
afterAll(() => h.close())

// What a rejected request must leave as it was. Events are append-only (the database refuses
// UPDATE and DELETE), so their count and last position say it all; projection rows could be
// rewritten in place, so their whole content is digested.
async function snapshot() {
  const result = await h.db.execute(
    sql.raw(`
      select (select count(*)::int from events) as events,
             (select coalesce(max(position), 0)::text from events) as "lastPosition",
             (select count(*)::int from plants) as plants,
             (select md5(coalesce(string_agg(concat_ws('|', owner, id, name, tag, position), ',' order by owner, id), ''))
                from plants) as "plantsDigest"`),
  )
  const rows = rowsOf<{ events: number; lastPosition: string; plants: number; plantsDigest: string }>(result)
  return rows[0]
}

function toRequest({ method, path, headers, body }: HostileRequest): Request {
  return new Request(`http://localhost${path}`, { method, headers, body: body as BodyInit | undefined })
}

test(`${RUNS} hostile requests: never a 5xx, always the Error body, and a rejected request changes nothing`, async () => {
  let before = await snapshot()
  const statuses = new Map<number, number>()
  await fc.assert(
    fc.asyncProperty(requests, async (hostile) => {
      // given any request at all
      // when the app handles it
      const response = await h.app.handle(toRequest(hostile))
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
      // then it is never a server error
      expect(response.status).toBeLessThan(500)
      // and every error is the Error body (exactly its two members), naming its own status
      if (response.status >= 400) {
        expect(response.headers.get('content-type')).toStartWith('application/json')
        if (hostile.method !== 'HEAD') {
          const body = (await response.json()) as Record<string, unknown>
          expect(Value.Check(ErrorBody, body)).toBe(true)
          expect(Object.keys(body).sort()).toEqual(['error', 'message'])
          expect(body.error).toBe(response.status)
        }
      } else {
        await response.arrayBuffer()
      }
      // and only an accepted creation may change the stored data
      const after = await snapshot()
      const mayWrite = hostile.method === 'POST' && response.status === 200
      if (!mayWrite) expect(after).toEqual(before)
      expect(after?.events).toBe(after?.plants)
      before = after
    }),
    { numRuns: RUNS },
  )
  // the generators reach past authentication and validation, not only the front door
  expect(statuses.get(200)).toBeGreaterThan(100)
  for (const status of [400, 401, 404, 415]) expect(statuses.get(status)).toBeGreaterThan(10)
}, 120_000)
