import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeCursor, encodeCursor } from '../../src/plants/cursor.ts'
import { createHarness, type Harness, STORAGE_KINDS } from '../support/harness.ts'

// The model: each owner's plants in creation order, which is the service's listing order.
type ModelPlant = { id: number; name: string; tag?: string; seq: number }
type Model = Map<number, ModelPlant[]>
type Listed = { name: string; tag?: string }

const OWNERS = 4
const action = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      owner: fc.nat(OWNERS - 1),
      id: fc.integer({ min: 1, max: 6 }),
      variant: fc.constantFrom('a', 'b'),
      tag: fc.option(fc.constantFrom('x', ''), { nil: undefined }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('list' as const),
      owner: fc.nat(OWNERS - 1),
      limit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('foreignCursor' as const),
      owner: fc.nat(OWNERS - 1),
      other: fc.nat(OWNERS - 1),
      limit: fc.integer({ min: 1, max: 2 }),
      // 0: the cursor as taken; otherwise one crafted from it, a few positions either side, or
      // the first and last positions there can be.
      shift: fc.constantFrom(0, 0, -2, -1, 1, 2, 'first' as const, 'last' as const),
      pageSize: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    }),
  },
)

function craft(after: string, shift: number | 'first' | 'last'): string {
  if (shift === 'first') return encodeCursor(1n)
  if (shift === 'last') return encodeCursor(2n ** 63n - 1n)
  const position = (decodeCursor(after) ?? 1n) + BigInt(shift)
  return encodeCursor(position < 1n ? 1n : position)
}

// `part` is `whole` without some of its first elements.
const isSuffixOf = (part: Listed[], whole: Listed[]) =>
  part.length <= whole.length && Bun.deepEquals(part, whole.slice(whole.length - part.length))

const expected = (plants: ModelPlant[]): Listed[] =>
  plants.map(({ name, tag }) => (tag === undefined ? { name } : { name, tag }))
const nextLink = (response: Response) =>
  /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]

describe.each(STORAGE_KINDS)('tenant isolation on %s, checked against an in-memory model', (kind) => {
  let h: Harness
  let run = 0
  // How many foreign or crafted cursors were followed to a non-empty listing: the property must
  // not pass only because the generated sequences never got that far.
  const crossings = { taken: 0, crafted: 0 }
  beforeAll(async () => {
    h = await createHarness(kind)
  })
  afterAll(() => h.close())

  test('random sequences of creates, lists and crafted cursors never show one owner another owner’s plant', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 10, maxLength: 40, size: 'max' }), async (actions) => {
        // given fresh owners for this sequence, and an empty model
        run++
        const owner = (index: number) => `run${run}-owner${index}`
        const tokens = await Promise.all(
          Array.from({ length: OWNERS }, (_, index) => h.tokenFor(owner(index))),
        )
        const model: Model = new Map()
        let seq = 0
        const get = async (index: number, path: string) => {
          const response = await h.request('GET', path, { token: tokens[index] })
          expect(response.status).toBe(200)
          const listed = (await response.json()) as Listed[]
          // no listing ever holds a plant of another owner
          for (const plant of listed) expect(plant.name.startsWith(`${owner(index)}:`)).toBe(true)
          return { listed, next: nextLink(response) }
        }

        for (const step of actions) {
          const plants = model.get(step.owner) ?? []
          model.set(step.owner, plants)
          if (step.kind === 'create') {
            // when an owner creates (or re-creates) a plant, the answer is the model's
            const name = `${owner(step.owner)}:${step.variant}${step.id}`
            const response = await h.request('POST', '/plants', {
              token: tokens[step.owner],
              body: { id: step.id, name, tag: step.tag },
            })
            const existing = plants.find((plant) => plant.id === step.id)
            if (!existing) plants.push({ id: step.id, name, tag: step.tag, seq: seq++ })
            const same = !existing || (existing.name === name && existing.tag === step.tag)
            expect(response.status).toBe(same ? 200 : 409)
          } else if (step.kind === 'list') {
            // when an owner lists, whole or page by page, they see exactly their own plants
            let path: string | undefined =
              step.limit === undefined ? '/plants' : `/plants?limit=${step.limit}`
            const seen: Listed[] = []
            while (path) {
              const page = await get(step.owner, path)
              if (step.limit !== undefined) expect(page.listed.length).toBeLessThanOrEqual(step.limit)
              seen.push(...page.listed)
              path = step.limit === 0 ? undefined : page.next
            }
            expect(seen).toEqual(step.limit === 0 ? [] : expected(plants))
          } else {
            // when an owner follows a cursor taken from another owner's page, or crafted from one
            const foreign = await get(step.other, `/plants?limit=${step.limit}`)
            if (!foreign.next) continue
            const taken = new URL(foreign.next, 'http://localhost').searchParams.get('after') ?? ''
            const after = step.shift === 0 ? taken : craft(taken, step.shift)
            let path: string | undefined =
              step.pageSize === undefined
                ? `/plants?after=${after}`
                : `/plants?limit=${step.pageSize}&after=${after}`
            const seen: Listed[] = []
            while (path) {
              const page = await get(step.owner, path)
              seen.push(...page.listed)
              path = page.next
            }
            // then they see only their own plants, each once, from the position onwards
            const pointedAt = (model.get(step.other) ?? [])[step.limit]?.seq ?? Number.POSITIVE_INFINITY
            const fromPointed = expected(plants.filter((plant) => plant.seq >= pointedAt))
            const own = expected(plants)
            if (seen.length > 0) crossings[step.shift === 0 ? 'taken' : 'crafted']++
            if (step.shift === 0) expect(seen).toEqual(fromPointed)
            else if (step.shift === 'first') expect(seen).toEqual(own)
            else if (step.shift === 'last') expect(seen).toEqual([])
            else if (step.shift > 0) expect(isSuffixOf(seen, fromPointed)).toBe(true)
            else expect(isSuffixOf(fromPointed, seen) && isSuffixOf(seen, own)).toBe(true)
          }
        }
      }),
      { numRuns: 150 },
    )
    expect(crossings.taken).toBeGreaterThan(15)
    expect(crossings.crafted).toBeGreaterThan(20)
  }, 120_000)
})
