import { describe, expect, test } from 'bun:test'
import type { Database } from '../../src/database/database.ts'
import type { PlantListing, Uncovered } from '../../src/plants/listing.ts'
import { replicaReads } from '../../src/plants/listing-source.ts'
import { PRIMARY } from '../../src/replicas/replica-choice.ts'
import type { ReadReplica } from '../../src/replicas/replica-health.ts'

// Routing decided over stand-in sources: each answers what the test says, on a clock of the test.
type Answer = PlantListing | Uncovered | Error
const page = (name: string): PlantListing => ({
  kind: 'page',
  body: JSON.stringify([{ name }]),
  position: 0n,
  generation: 0n,
})
const absent: Uncovered = { kind: 'uncovered', event: 'absent' }
const other: Uncovered = { kind: 'uncovered', event: 'other' }
const unreachable = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })

function scenario(answers: Record<string, (call: number) => Answer>, waitMs = 100) {
  const sources = Object.keys(answers).map((name) => ({ name, db: { name } as unknown as Database }))
  const primary = { name: PRIMARY } as unknown as Database
  const calls: string[] = []
  const down: string[] = []
  const served: string[] = []
  const waits: (number | undefined)[] = []
  let now = 0
  const read = replicaReads({
    primary,
    replicas: {
      available: () => sources.filter((source) => !down.includes(source.name)),
      markDown: (replica: ReadReplica) => down.push(replica.name),
    },
    waitMs,
    onRead: (source, waitedMs) => {
      served.push(source)
      waits.push(waitedMs)
    },
    list: async (db) => {
      const name = (db as unknown as { name: string }).name
      calls.push(name)
      if (name === PRIMARY) return page('from the primary')
      const answer = answers[name]?.(calls.filter((call) => call === name).length) ?? absent
      if (answer instanceof Error) throw answer
      return answer
    },
    clock: () => now,
    sleep: async (ms) => {
      now += ms
    },
  })
  return { read, calls, down, served, waits, elapsed: () => now }
}

describe('replicaReads', () => {
  test('without a position, a replica serves the read', async () => {
    const { read, served, waits } = scenario({ r1: () => page('from r1') })
    expect(await read({ owner: 'o' })).toEqual(page('from r1'))
    expect(served).toEqual(['r1'])
    expect(waits).toEqual([undefined])
  })

  test('an unreachable replica is marked down and the next source answers', async () => {
    const { read, served, down } = scenario({ r1: () => unreachable, r2: () => page('from r2') })
    expect(await read({ owner: 'o' }, 5n)).toEqual(page('from r2'))
    expect(down).toEqual(['r1'])
    expect(served).toEqual(['r2'])
  })

  test('any other failure of a replica goes to the primary without marking it down', async () => {
    const conflict = Object.assign(new Error('canceling statement due to conflict with recovery'), {
      code: '40001',
    })
    const { read, served, down } = scenario({ r1: () => conflict })
    expect(await read({ owner: 'o' })).toEqual(page('from the primary'))
    expect(down).toEqual([])
    expect(served).toEqual([PRIMARY])
  })

  test('a replica behind the position is looked at again until it shows it', async () => {
    const { read, served, elapsed, waits } = scenario({
      r1: (call) => (call < 4 ? absent : page('from r1')),
    })
    expect(await read({ owner: 'o' }, 7n)).toEqual(page('from r1'))
    expect(served).toEqual(['r1'])
    expect(elapsed()).toBeLessThan(100)
    // the fourth look found it: it began after the three looks before and their waits
    expect(waits).toEqual([elapsed()])
    expect(elapsed()).toBe(1 + 2 + 5)
  })

  test('a replica still behind when the wait is over: the primary answers, within the wait', async () => {
    const { read, served, elapsed } = scenario({ r1: () => absent }, 500)
    expect(await read({ owner: 'o' }, 7n)).toEqual(page('from the primary'))
    expect(served).toEqual([PRIMARY])
    expect(elapsed()).toBeLessThanOrEqual(500)
    expect(elapsed()).toBeGreaterThan(400)
  })

  test("another owner's event at the position: the primary at once, no waiting", async () => {
    const { read, served, elapsed, calls } = scenario({ r1: () => other, r2: () => page('from r2') })
    expect(await read({ owner: 'o' }, 7n)).toEqual(page('from the primary'))
    expect(served).toEqual([PRIMARY])
    expect(elapsed()).toBe(0)
    expect(calls).toEqual(['r1', PRIMARY])
  })

  test('with no replica available the primary answers at once', async () => {
    const { read, served, elapsed } = scenario({})
    expect(await read({ owner: 'o' }, 7n)).toEqual(page('from the primary'))
    expect(served).toEqual([PRIMARY])
    expect(elapsed()).toBe(0)
  })
})
