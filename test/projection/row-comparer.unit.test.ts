import { describe, expect, test } from 'bun:test'
import type { ProjectionRow } from '../../src/projection/projection-diff.ts'
import { createRowComparer } from '../../src/projection/row-comparer.ts'

const row = (owner: string, id: number, position: number, name = `plant ${id}`, tag: string | null = null) =>
  ({ owner, id: BigInt(id), name, tag, position: BigInt(position) }) satisfies ProjectionRow

// Feeds both sides as the verification does: owner after owner, each event's row just before
// the projection's row at the same position.
function compare(expected: ProjectionRow[], actual: ProjectionRow[], exampleCount = 3) {
  const comparer = createRowComparer(exampleCount)
  const lines = [
    ...expected.map((each) => ({ side: 0, each })),
    ...actual.map((each) => ({ side: 1, each })),
  ].sort(
    (a, b) =>
      (a.each.owner < b.each.owner ? -1 : a.each.owner > b.each.owner ? 1 : 0) ||
      Number(a.each.position - b.each.position) ||
      a.side - b.side,
  )
  for (const { side, each } of lines) (side === 0 ? comparer.expected : comparer.actual)(each)
  return comparer.finish()
}

describe('comparing the fold of the log with the projection', () => {
  test('the same rows on both sides are in sync', () => {
    const rows = [row('a', 1, 1), row('b', 2, 2), row('a', 3, 3)]
    expect(
      compare(
        rows,
        rows.map((each) => ({ ...each })),
      ),
    ).toEqual({
      missing: { count: 0, examples: [] },
      extra: { count: 0, examples: [] },
      changed: { count: 0, examples: [] },
    })
  })

  test('a row only the log has is missing, one only the projection has is extra', () => {
    const diff = compare([row('a', 1, 1), row('a', 2, 2)], [row('a', 1, 1), row('b', 9, 7)])
    expect(diff.missing).toEqual({ count: 1, examples: [row('a', 2, 2)] })
    expect(diff.extra).toEqual({ count: 1, examples: [row('b', 9, 7)] })
    expect(diff.changed.count).toBe(0)
  })

  test('the same id of another owner is another row', () => {
    const diff = compare([row('a', 1, 1)], [row('b', 1, 1)])
    expect([diff.missing.count, diff.extra.count, diff.changed.count]).toEqual([1, 1, 0])
  })

  test('a name, a tag (empty is not null) or a position that differs is changed, found wherever it stands', () => {
    const expected = [row('a', 1, 1, 'x'), row('a', 2, 2, 'y', ''), row('a', 3, 3)]
    const actual = [row('a', 1, 1, 'x!'), row('a', 2, 2, 'y', null), row('a', 3, 1003)]
    const diff = compare(expected, actual)
    expect(diff.changed.count).toBe(3)
    expect(diff.changed.examples.map(({ expected, actual }) => [expected.id, actual.position])).toEqual([
      [1n, 1n],
      [2n, 2n],
      [3n, 1003n],
    ])
    expect([diff.missing.count, diff.extra.count]).toEqual([0, 0])
  })

  test('every drift is counted; the examples are the first few by position', () => {
    const expected = [5, 3, 9, 1, 7].map((position) => row(`o${position}`, position, position))
    const diff = compare(expected, [], 2)
    expect(diff.missing.count).toBe(5)
    expect(diff.missing.examples.map((each) => each.position)).toEqual([1n, 3n])
  })

  test('a projection in step with the log keeps nothing waiting between rows', () => {
    const comparer = createRowComparer()
    let mostWaiting = 0
    for (let i = 1; i <= 1000; i++) {
      comparer.expected(row(`owner-${Math.floor(i / 100)}`, i, i))
      mostWaiting = Math.max(mostWaiting, comparer.waiting())
      comparer.actual(row(`owner-${Math.floor(i / 100)}`, i, i))
      mostWaiting = Math.max(mostWaiting, comparer.waiting())
    }
    expect(mostWaiting).toBe(1)
    const diff = comparer.finish()
    expect([diff.missing.count, diff.extra.count, diff.changed.count]).toEqual([0, 0, 0])
  })
})
