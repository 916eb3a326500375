import type { Drift, ProjectionDiff, ProjectionRow } from './projection-diff.ts'

export type RowComparer = {
  // A row of the fold of the log, or of the projection. The rows of one owner come together:
  // those of another owner in between would make the first owner's rows compared twice, apart.
  expected: (row: ProjectionRow) => void
  actual: (row: ProjectionRow) => void
  finish: () => ProjectionDiff
  // How many rows wait for their counterpart now.
  waiting: () => number
}

// Compares the fold of the log with the projection as both stream by, owner after owner: a row
// waits only until its counterpart of the same (owner, id) comes, and those of an owner that
// find none are missing (or extra) when the next owner begins. So what it holds is the rows of
// one owner still unmatched: one at a time when both sides come in the same order (by owner and
// position), whatever the size of the store; more only where the projection has drifted.
export function createRowComparer(exampleCount = 3): RowComparer {
  const missing = examples<ProjectionRow>(exampleCount, (row) => row.position)
  const extra = examples<ProjectionRow>(exampleCount, (row) => row.position)
  const changed = examples<{ expected: ProjectionRow; actual: ProjectionRow }>(
    exampleCount,
    (pair) => pair.expected.position,
  )
  let owner: string | undefined
  const waitingExpected = new Map<bigint, ProjectionRow>()
  const waitingActual = new Map<bigint, ProjectionRow>()

  const endOwner = () => {
    for (const row of waitingExpected.values()) missing.add(row)
    for (const row of waitingActual.values()) extra.add(row)
    waitingExpected.clear()
    waitingActual.clear()
  }
  const enter = (row: ProjectionRow) => {
    if (row.owner === owner) return
    endOwner()
    owner = row.owner
  }
  const pair = (expected: ProjectionRow, actual: ProjectionRow) => {
    if (!sameValues(expected, actual)) changed.add({ expected, actual })
  }

  return {
    expected(row) {
      enter(row)
      const actual = waitingActual.get(row.id)
      if (actual === undefined) waitingExpected.set(row.id, row)
      else {
        waitingActual.delete(row.id)
        pair(row, actual)
      }
    },
    actual(row) {
      enter(row)
      const expected = waitingExpected.get(row.id)
      if (expected === undefined) waitingActual.set(row.id, row)
      else {
        waitingExpected.delete(row.id)
        pair(expected, row)
      }
    },
    finish() {
      endOwner()
      owner = undefined
      return { missing: missing.drift(), extra: extra.drift(), changed: changed.drift() }
    },
    waiting: () => waitingExpected.size + waitingActual.size,
  }
}

// As SQL's `is distinct from` on (name, tag, position): an empty tag is not a null one.
function sameValues(expected: ProjectionRow, actual: ProjectionRow): boolean {
  return expected.name === actual.name && expected.tag === actual.tag && expected.position === actual.position
}

// Counts every example added and keeps the `limit` first by `positionOf`.
function examples<Example>(limit: number, positionOf: (example: Example) => bigint) {
  let count = 0
  const kept: Example[] = []
  return {
    add(example: Example) {
      count++
      const position = positionOf(example)
      const at = kept.findIndex((each) => positionOf(each) > position)
      if (at === -1) {
        if (kept.length < limit) kept.push(example)
        return
      }
      kept.splice(at, 0, example)
      if (kept.length > limit) kept.pop()
    },
    drift: (): Drift<Example> => ({ count, examples: [...kept] }),
  }
}
