import { expect, test } from 'bun:test'
import postgres from 'postgres'
import { databaseForFile } from '../support/postgres.ts'
import { settles } from '../support/watched-socket.ts'

// A backend ended by pg_terminate_backend sends its FATAL error, then closes. postgres.js 3.4.9
// failed the statement in flight with the close and kept that error, which then failed the first
// statement of the connection opened next, on a healthy session
// (patches/postgres@3.4.9.patch; fails without it).
const database = databaseForFile('terminated_backend')

test('given a statement whose backend is ended, when the next statement runs, then it runs on a new session untouched by the old error', async () => {
  // given
  const sql = postgres(database.url(), { max: 1, onnotice: () => {} })
  const [before] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`
  const inFlight = settles(sql`select pg_sleep(30)`, 5000)
  await Bun.sleep(100)
  // when
  await database.admin()`select pg_terminate_backend(${before?.pid ?? 0})`
  expect(await inFlight).toBe('CONNECTION_CLOSED')
  const next = sql<{ pid: number }[]>`select pg_backend_pid() as pid`
  // then
  expect(await settles(next, 5000)).toBe('resolved')
  expect((await next)[0]?.pid).not.toBe(before?.pid)
  await sql.end({ timeout: 1 })
})
