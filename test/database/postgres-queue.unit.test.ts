import { expect, test } from 'bun:test'

// postgres.js keeps its pool's connections (idle, busy, waiting queries) in queues of its own
// (node_modules/postgres/src/queue.js, not a public API). Released, a queue never gave back the slots it had handed
// out unless it ran empty, which a pool under steady load never does: its array grew with every
// query served, and every move of a connection scanned all of it (patches/postgres@3.4.9.patch).
// This fails when an upgrade drops the patch, or changes the queue under it.
type Queue<T> = { readonly length: number; push: (x: T) => T; shift: () => T; remove: (x: T) => T | null }
const queueModule = new URL('../../node_modules/postgres/src/queue.js', import.meta.url).pathname
const { default: createQueue } = (await import(queueModule)) as { default: <T>(initial?: T[]) => Queue<T> }

// The queue copies its initial array with `slice`, which keeps the subclass: every array it
// works on reports how long it got.
class Measured<T> extends Array<T> {
  static longest = 0
  override push(...items: T[]): number {
    const length = super.push(...items)
    Measured.longest = Math.max(Measured.longest, length)
    return length
  }
}

test('a queue that never runs empty does not keep what it handed out', () => {
  // given ten connections taking turns, as a busy pool's are
  const queue = createQueue(Measured.from({ length: 10 }, (_, index) => `connection ${index}`))
  Measured.longest = 0
  // when twenty thousand queries have each taken one and given it back
  for (let query = 0; query < 20_000; query++) {
    const connection = queue.shift()
    queue.remove(connection)
    queue.push(connection)
  }
  // then the queue still holds the ten, in turn, in an array that did not grow with the queries
  expect(queue.length).toBe(10)
  expect(Measured.longest).toBeLessThan(200)
  expect(Array.from({ length: 10 }, () => queue.push(queue.shift()))).toEqual(
    Array.from({ length: 10 }, (_, index) => `connection ${index}`),
  )
})

test('remove takes out the element asked for, once, and keeps the order of the rest', () => {
  // given
  const queue = createQueue<string>()
  for (const item of ['a', 'b', 'c', 'd']) queue.push(item)
  queue.shift()
  // when
  const removed = [queue.remove('c'), queue.remove('c'), queue.remove('a')]
  // then
  expect(removed).toEqual(['c', null, null])
  expect([queue.shift(), queue.shift(), queue.length]).toEqual(['b', 'd', 0])
})
