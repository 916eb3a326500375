import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { decide, evolve, initialState, type Plant, type PlantState } from '../../src/domain/plant.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import {
  type CreateRequest,
  type CreateResult,
  createPlant,
  createPlants,
  plantCreator,
} from '../../src/plants/create-plant.ts'
import { describeEachStorage } from '../support/each-storage.ts'
import { count, eventsOfOwner, listing, rowsOf, type TestStorage } from '../support/storage.ts'

const now = new Date('2026-01-02T03:04:05.678Z')
const request = (owner: string, id: bigint, name: string, tag: string | null = null): CreateRequest => ({
  command: { type: 'CreatePlant', owner, plant: { id, name, tag }, now },
  requestId: `${owner}-${id}-${name}`,
})

// Each create of a batch gets its own answer, as if it had been made alone.
describeEachStorage(
  (kind) => `a batch of creates on ${kind}`,
  async (storage) => {
    // A create the database refuses, the way a constraint or a trigger refuses a row (on the
    // projection, where the name is readable: the event's is sealed).
    await storage.db.execute(
      sql.raw(`create function refuse_test_plant() returns trigger language plpgsql as $$
          begin
            if new.name = 'Refused' then raise exception 'refused by the test'; end if;
            return new;
          end $$`),
    )
    await storage.db.execute(
      sql.raw(`create trigger refuse_test_plant before insert on plants
                 for each row execute function refuse_test_plant()`),
    )
  },
  (storage, kind) => {
    const positionOf = async (owner: string, id: bigint) => {
      const found = (await eventsOfOwner(storage(), owner)).find((event) => event.data?.id === id.toString())
      return found?.position
    }

    test('a new create, a retry, a conflict and two creates of one new id share one transaction', async () => {
      // given
      const stored = await createPlant(
        storage().db,
        ownerKeyCache(storage().keyring),
        request('ada', 1n, 'Fern', 'green').command,
        'seed',
      )
      const eventsBefore = await count(storage().db, 'events')
      // when
      const results = await createPlants(storage().db, ownerKeyCache(storage().keyring), [
        request('ada', 2n, 'Palm'),
        request('ada', 1n, 'Fern', 'green'),
        request('ada', 1n, 'Fern', 'blue'),
        request('bea', 3n, 'Ivy'),
        request('bea', 3n, 'Ivy'),
        request('bea', 3n, 'Oak'),
      ])
      // then each has its own answer
      const palm = await positionOf('ada', 2n)
      const ivy = await positionOf('bea', 3n)
      expect(results).toEqual([
        { status: 'fulfilled', value: expect.objectContaining({ outcome: 'created', position: palm }) },
        {
          status: 'fulfilled',
          value: expect.objectContaining({ outcome: 'unchanged', position: stored.position }),
        },
        {
          status: 'fulfilled',
          value: expect.objectContaining({
            outcome: 'conflict',
            existing: { id: 1n, name: 'Fern', tag: 'green' },
            position: stored.position,
          }),
        },
        { status: 'fulfilled', value: expect.objectContaining({ outcome: 'created', position: ivy }) },
        { status: 'fulfilled', value: expect.objectContaining({ outcome: 'unchanged', position: ivy }) },
        {
          status: 'fulfilled',
          value: expect.objectContaining({
            outcome: 'conflict',
            existing: { id: 3n, name: 'Ivy', tag: null },
          }),
        },
      ])
      // and exactly the two new plants were appended, in one transaction, and projected
      expect(await count(storage().db, 'events')).toBe(eventsBefore + 2)
      const transactions = await rowsOf(
        storage().db,
        `select distinct transaction_id::text from events where position in (${palm}, ${ivy})`,
      )
      expect(transactions).toHaveLength(1)
      expect(await listing(storage().db, 'ada')).toEqual([{ name: 'Fern', tag: 'green' }, { name: 'Palm' }])
      expect(await listing(storage().db, 'bea')).toEqual([{ name: 'Ivy' }])
    })

    test('a create the database refuses fails alone; its batch-mates get their answers', async () => {
      // given
      const stored = await createPlant(
        storage().db,
        ownerKeyCache(storage().keyring),
        request('cy', 1n, 'Fern').command,
        'seed',
      )
      const eventsBefore = await count(storage().db, 'events')
      // when
      const results = await createPlants(storage().db, ownerKeyCache(storage().keyring), [
        request('cy', 2n, 'Palm'),
        request('cy', 1n, 'Fern'),
        request('cy', 1n, 'Moss'),
        request('cy', 3n, 'Refused'),
        request('cy', 4n, 'Ivy'),
        request('cy', 4n, 'Ivy'),
      ])
      // then
      expect(
        results.map((result) => (result.status === 'fulfilled' ? result.value.outcome : 'failed')),
      ).toEqual(['created', 'unchanged', 'conflict', 'failed', 'created', 'unchanged'])
      expect(results[1]).toMatchObject({ value: { position: stored.position } })
      expect(causesOf((results[3] as PromiseRejectedResult).reason)).toContain('refused by the test')
      // and the refused create changed nothing
      expect(await count(storage().db, 'events')).toBe(eventsBefore + 2)
      expect(await listing(storage().db, 'cy')).toEqual([{ name: 'Fern' }, { name: 'Palm' }, { name: 'Ivy' }])
    })

    test('creates that arrive together through the creator go in one batch, each with its answer', async () => {
      // given
      const create = plantCreator(storage().db, ownerKeyCache(storage().keyring))
      // when twenty creates arrive in the same turn, five of them retries of one plant
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, index) => {
          const { command, requestId } = request(
            'dan',
            BigInt(index < 5 ? 0 : index),
            `plant ${index < 5 ? 0 : index}`,
          )
          return create(command, requestId)
        }),
      )
      // then
      expect(answers.map((answer) => answer.outcome)).toEqual(
        Array.from({ length: 20 }, (_, index) => (index === 0 || index >= 5 ? 'created' : 'unchanged')),
      )
      const [row] = await rowsOf(
        storage().db,
        `select count(distinct transaction_id)::int as transactions, count(*)::int as events
         from events where metadata->>'pseudonym' = (select pseudonym from owner_keys where owner = 'dan')`,
      )
      expect(row).toEqual({ transactions: 1, events: 16 })
    })

    // Any order of creates, cut into batches anyhow, ends as the same creates one by one: the same
    // answers, the same log and the same projection, and the answers the pure decider gives.
    test('any order of creates in any batching ends as the creates one by one', async () => {
      let run = 0
      const create = fc.record({
        owner: fc.constantFrom('ann', 'ben'),
        id: fc.bigInt({ min: 1n, max: 4n }),
        name: fc.constantFrom('A', 'B'),
        tag: fc.constantFrom(null, 't'),
      })
      const scenario = fc
        .array(create, { minLength: 1, maxLength: 20 })
        .chain((creates) =>
          fc.tuple(
            fc.constant(creates),
            fc.array(fc.boolean(), { minLength: creates.length, maxLength: creates.length }),
          ),
        )
      await fc.assert(
        fc.asyncProperty(scenario, async ([creates, cuts]) => {
          run++
          const requestsFor = (prefix: string) =>
            creates.map(({ owner, id, name, tag }) => request(`${prefix}${run}-${owner}`, id, name, tag))
          // given the creates one by one
          const serial: CreateResult[] = []
          for (const { command, requestId } of requestsFor('serial'))
            serial.push(await createPlant(storage().db, ownerKeyCache(storage().keyring), command, requestId))
          // when the same creates go in batches, cut where the property says
          const batched: CreateResult[] = []
          let batch: CreateRequest[] = []
          const requests = requestsFor('batched')
          for (const [index, item] of requests.entries()) {
            batch.push(item)
            if (cuts[index] || index === requests.length - 1) {
              for (const result of await createPlants(
                storage().db,
                ownerKeyCache(storage().keyring),
                batch,
              )) {
                if (result.status === 'rejected') throw result.reason
                batched.push(result.value)
              }
              batch = []
            }
          }
          // then the answers are the same, and those of the pure decider
          const answers = (results: typeof serial) => {
            const ranks = [...new Set(results.map((result) => result.position))].sort((a, b) =>
              a < b ? -1 : 1,
            )
            return results.map(({ outcome, plant, position }) => ({
              outcome,
              plant,
              rank: ranks.indexOf(position),
            }))
          }
          expect(answers(batched)).toEqual(answers(serial))
          expect(batched.map((result) => result.outcome)).toEqual(modelOutcomes(creates))
          // and so are the log and the projection, in order
          expect(await logOf(storage(), `batched${run}-`)).toEqual(await logOf(storage(), `serial${run}-`))
          expect(await projectionOf(storage(), `batched${run}-`)).toEqual(
            await projectionOf(storage(), `serial${run}-`),
          )
        }),
        { numRuns: kind === 'postgres' ? 40 : 20 },
      )
    }, 120_000)
  },
  30_000,
)

function modelOutcomes(creates: { owner: string; id: bigint; name: string; tag: string | null }[]) {
  const states = new Map<string, PlantState>()
  return creates.map(({ owner, id, name, tag }) => {
    const key = `${owner}/${id}`
    const plant: Plant = { id, name, tag }
    const decision = decide({ type: 'CreatePlant', owner, plant, now }, states.get(key) ?? initialState)
    states.set(key, decision.events.reduce(evolve, states.get(key) ?? initialState))
    return decision.outcome
  })
}

async function logOf(storage: TestStorage, prefix: string) {
  const owners = await rowsOf(
    storage.db,
    `select owner from owner_keys where owner like '${prefix}%' and not erasing`,
  )
  const log = await Promise.all(
    owners.map(async ({ owner }) =>
      (await eventsOfOwner(storage, String(owner))).map((event) => ({
        position: event.position,
        owner: String(owner).slice(prefix.length),
        stream_version: event.streamVersion,
        type: event.type,
        data: JSON.stringify(event.data),
      })),
    ),
  )
  return log
    .flat()
    .sort((a, b) => (a.position < b.position ? -1 : 1))
    .map(({ position: _, ...event }) => event)
}

async function projectionOf(storage: TestStorage, prefix: string) {
  return rowsOf(
    storage.db,
    `select substr(owner, ${prefix.length + 1}) as owner, id::text as id, name, tag
     from plants where owner like '${prefix}%' order by position`,
  )
}

// Drizzle wraps the driver's error; the database's message is on its cause.
function causesOf(error: unknown): string {
  const messages: string[] = []
  for (let current = error; current instanceof Error; current = current.cause) messages.push(current.message)
  return messages.join(' / ')
}
