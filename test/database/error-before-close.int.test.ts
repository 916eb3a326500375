import { expect, test } from 'bun:test'
import { databaseForFile } from '../support/postgres.ts'
import { resetUnderStatement, settles, watchedClient } from '../support/watched-socket.ts'

// Bun reports a reset connection as an 'error' (ECONNRESET) and only later as a 'close' with
// hadError. postgres.js 3.4.9 failed the statements in flight at the error, and at a close with
// an error failed nothing, so a statement sent in between was neither answered nor failed: a
// lock's next take hung. It also kept the failed statement as the connection's current one, so
// end() waited for it forever (the pull request porsager/postgres#1142). Each test fails without
// patches/postgres@3.4.9.patch.
const database = databaseForFile('error_before_close')

test('given a connection reset, when a statement is sent between the error and the close, then it fails with the close', async () => {
  // given: a reserved connection whose socket no longer reads, then reports a reset
  const { sql, socket } = watchedClient(database.url())
  const reserved = await sql.reserve()
  await reserved`select 1`
  const reset = socket()
  expect(await resetUnderStatement(reset, () => reserved`select 1`)).toBe('ECONNRESET')
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
  const { sql, socket } = watchedClient(database.url())
  await sql`select 1`
  const reset = socket()
  expect(await resetUnderStatement(reset, () => sql`select 1`)).toBe('ECONNRESET')
  reset.destroy()
  reset.emit('close', true)
  // when
  const ended = settles(sql.end(), 5000)
  // then
  expect(await ended).toBe('resolved')
})
