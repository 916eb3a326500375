import { describe, expect, test } from 'bun:test'
import { groupCommit, type RunBatch } from '../../src/shared/batching.ts'

// A batch runner whose batches the test finishes by hand, recording what each batch held.
function heldBatches() {
  const batches: number[][] = []
  const finishers: (() => void)[] = []
  const run: RunBatch<number, string> = (inputs) => {
    batches.push(inputs)
    return new Promise((resolve) => {
      finishers.push(() =>
        resolve(
          inputs.map((input) =>
            input < 0
              ? { status: 'rejected', reason: new Error(`refused ${input}`) }
              : { status: 'fulfilled', value: `done ${input}` },
          ),
        ),
      )
    })
  }
  const finishNext = async () => {
    finishers.shift()?.()
    await Bun.sleep(0)
  }
  return { run, batches, finishNext }
}

describe('group commit', () => {
  test('a lone item goes at once, in a batch of its own', async () => {
    // given
    const { run, batches, finishNext } = heldBatches()
    const submit = groupCommit(run, { maxBatchSize: 10, inFlight: 1 })
    // when
    const answer = submit(1)
    await Bun.sleep(0)
    // then
    expect(batches).toEqual([[1]])
    await finishNext()
    expect(await answer).toBe('done 1')
  })

  test('items that arrive while a batch is in flight all go in the next batch, when it returns', async () => {
    // given a batch in flight
    const { run, batches, finishNext } = heldBatches()
    const submit = groupCommit(run, { maxBatchSize: 10, inFlight: 1 })
    const first = submit(1)
    await Bun.sleep(0)
    // when more arrive, one by one
    const later: Promise<string>[] = []
    for (const input of [2, 3, 4]) {
      later.push(submit(input))
      await Bun.sleep(0)
    }
    // then they wait for the batch in flight
    expect(batches).toEqual([[1]])
    // and go together once it returns
    await finishNext()
    expect(batches).toEqual([[1], [2, 3, 4]])
    await finishNext()
    expect(await Promise.all([first, ...later])).toEqual(['done 1', 'done 2', 'done 3', 'done 4'])
  })

  test('a batch takes at most the maximum; the rest go in the batches after it', async () => {
    // given
    const { run, batches, finishNext } = heldBatches()
    const submit = groupCommit(run, { maxBatchSize: 2, inFlight: 1 })
    // when five arrive in one turn
    const answers = [1, 2, 3, 4, 5].map(submit)
    await Bun.sleep(0)
    await finishNext()
    await finishNext()
    await finishNext()
    // then
    expect(batches).toEqual([[1, 2], [3, 4], [5]])
    expect(await Promise.all(answers)).toHaveLength(5)
  })

  test('with two lanes, a second batch starts while the first is in flight', async () => {
    // given
    const { run, batches } = heldBatches()
    const submit = groupCommit(run, { maxBatchSize: 10, inFlight: 2 })
    // when
    void submit(1)
    await Bun.sleep(0)
    void submit(2)
    void submit(3)
    await Bun.sleep(0)
    void submit(4)
    await Bun.sleep(0)
    // then the third batch waits for a lane
    expect(batches).toEqual([[1], [2, 3]])
  })

  test('starting when idle after the microtasks: a lone item does not wait for the turn, and those of its turn join it', async () => {
    // given a committer with nothing in flight, and a callback of the next turn that records
    const { run, batches, finishNext } = heldBatches()
    const submit = groupCommit(run, { maxBatchSize: 10, inFlight: 2, idleStart: 'microtask' })
    let atNextTurn: number[][] | undefined
    setImmediate(() => {
      atNextTurn = batches.map((batch) => [...batch])
    })
    // when two items come in one turn
    const answers = [submit(1), submit(2)]
    await Promise.resolve()
    // then their batch started before the turn ended
    expect(batches).toEqual([[1, 2]])
    // and while it is in flight, items wait for the turn as before and form the next batch
    void submit(3)
    void submit(4)
    await Promise.resolve()
    expect(batches).toEqual([[1, 2]])
    await Bun.sleep(0)
    expect(atNextTurn).toEqual([[1, 2]])
    expect(batches).toEqual([
      [1, 2],
      [3, 4],
    ])
    await finishNext()
    expect(await Promise.all(answers)).toEqual(['done 1', 'done 2'])
  })

  test('each item gets its own answer: one refused item does not fail its batch-mates', async () => {
    // given
    const { run, finishNext } = heldBatches()
    const submit = groupCommit(run, { maxBatchSize: 10, inFlight: 1 })
    // when
    const answers = [1, -2, 3].map((input) => submit(input).catch((error: Error) => error.message))
    await Bun.sleep(0)
    await finishNext()
    // then
    expect(await Promise.all(answers)).toEqual(['done 1', 'refused -2', 'done 3'])
  })

  test('a batch that fails as a whole fails each of its items, and the next batch still runs', async () => {
    // given a runner that fails its first batch
    const batches: number[][] = []
    const submit = groupCommit<number, number>(
      async (inputs) => {
        batches.push(inputs)
        if (batches.length === 1) throw new Error('connection lost')
        return inputs.map((value) => ({ status: 'fulfilled', value }))
      },
      { maxBatchSize: 10, inFlight: 1 },
    )
    // when
    const failed = [1, 2].map((input) => submit(input).catch((error: Error) => error.message))
    // then
    expect(await Promise.all(failed)).toEqual(['connection lost', 'connection lost'])
    expect(await submit(3)).toBe(3)
    expect(batches).toEqual([[1, 2], [3]])
  })
})
