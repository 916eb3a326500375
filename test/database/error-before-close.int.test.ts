import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { settles, watchedClient } from '../support/watched-socket.ts'

// Bun reports a reset connection as an 'error' (ECONNRESET) and only later as a 'close' with
// hadError. postgres.js 3.4.9 failed the statements in flight at the error, and at a close with
// an error failed nothing, so a statement sent in between was neither answered nor failed: a
// lock's next take hung. It also kept the failed statement as the connection's current one, so
// end() waited for it forever (the pull request porsager/postgres#1142). Each test fails without
// patches/postgres@3.4.9.patch.
let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase('error_before_close')
})
afterAll(async () => {
  await database?.drop()
})

test('given a connection reset, when a statement is sent between the error and the close, then it fails with the close', async () => {
  // given: a reserved connection whose socket no longer reads, then reports a reset
  const { sql, socket } = watchedClient(database.url)
  const reserved = await sql.reserve()
  await reserved`select 1`
  const reset = socket()
  reset.pause()
  const inFlight = settles(reserved`select 1`, 5000)
  await Bun.sleep(50)
  reset.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }))
  expect(await inFlight).toBe('ECONNRESET')
  // when
  const between = settles(reserved`rollback`, 5000)
  await Bun.sleep(50)
  reset.destroy()
  reset.emit('close', true)
  // then
  expect(await between).toBe('CONNECTION_CLOSED')
  reserved.release()
  expect(await settles(sql`select 1`, 5000)).toBe('resolved')
  await sql.end({ timeout: 1 })
})

test('given a statement failed by a connection reset, when the client ends, then end() completes', async () => {
  // given
  const { sql, socket } = watchedClient(database.url)
  await sql`select 1`
  const reset = socket()
  reset.pause()
  const inFlight = settles(sql`select 1`, 5000)
  await Bun.sleep(50)
  reset.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }))
  expect(await inFlight).toBe('ECONNRESET')
  reset.destroy()
  reset.emit('close', true)
  // when
  const ended = settles(sql.end(), 5000)
  // then
  expect(await ended).toBe('resolved')
})
