import { expect, test } from 'bun:test'
import { databaseForFile } from '../support/postgres.ts'
import { settles, watchedClient } from '../support/watched-socket.ts'

// postgres.js 3.4.9 gathers a statement's bytes and writes them on the next turn of the event loop
// (setImmediate). A connection that closed in between cancelled that write but left its timer set,
// so the next connection's startup message waited behind it until connect_timeout: after PgBouncer
// dropped the feed's leader mid-write, each of its questions took 6 s
// (patches/postgres@3.4.9.patch; fails without it).
const database = databaseForFile('unwritten_bytes')

test('given a statement not yet written, when its connection closes, then the next connection opens at once', async () => {
  // given
  const { sql, socket } = watchedClient(database.url(), 3)
  await sql`select 1`
  const first = socket()
  const unwritten = settles(sql`select 2`, 5000)
  // when: the close arrives before the write's turn, as a socket's close event can
  await closeAfterMicrotasks(first, 20)
  // then
  expect(await unwritten).toBe('CONNECTION_CLOSED')
  const started = performance.now()
  expect(await settles(sql`select 3`, 5000)).toBe('resolved')
  expect(performance.now() - started).toBeLessThan(2000)
  expect(socket()).not.toBe(first)
  await sql.end({ timeout: 1 })
})

// Runs after the statement's own microtasks (postgres.js sends it one microtask after it is
// asked for), still before any timer.
function closeAfterMicrotasks(socket: import('node:net').Socket, count: number) {
  return new Promise<void>((resolve) => {
    const step = (left: number) => {
      if (left > 0) return queueMicrotask(() => step(left - 1))
      socket.destroy()
      socket.emit('close', false)
      resolve()
    }
    step(count)
  })
}
