import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { settles } from '../support/watched-socket.ts'

// postgres.js 3.4.9's reserved connections (patches/postgres@3.4.9.patch; each test fails without
// it). The advisory locks (locks/advisory-lock.ts) hold one each, so a DBA ending its backend must
// fail the lock's statements, not hang them or end the process.
let database: TestDatabase
let admin: postgres.Sql
beforeAll(async () => {
  database = await createTestDatabase('reserved_closed')
  admin = postgres(database.url, { max: 1, onnotice: () => {} })
})
afterAll(async () => {
  await admin?.end()
  await database?.drop()
})

// porsager/postgres#1199 (and #1208: the statement's write on the closed socket threw from a timer,
// which ends the process).
test('given a reserved connection whose backend was ended, when it is used and released, then its statements fail and the pool goes on', async () => {
  // given
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  const reserved = await sql.reserve()
  const inFlight = settles(reserved`select pg_sleep(30)`, 5000)
  await Bun.sleep(100)
  // when
  await admin`select pg_terminate_backend(pid) from pg_stat_activity where query = 'select pg_sleep(30)'`
  // then
  expect(await inFlight).toBe('CONNECTION_CLOSED')
  expect(await settles(reserved`select 1`, 5000)).toBe('CONNECTION_CLOSED')
  reserved.release()
  expect(await settles(sql`select 1`, 5000)).toBe('resolved')
  await sql.end({ timeout: 1 })
})

test('given statements waiting on a reserved connection, when its backend is ended, then each of them fails', async () => {
  // given: a statement described first fills the connection, so the next ones wait in its queue
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  const reserved = await sql.reserve()
  const waiting = [
    settles(reserved`select pg_sleep(30), ${'described first'}::text as note`, 5000),
    settles(reserved`select 2`, 5000),
    settles(reserved`select 3`, 5000),
  ]
  await Bun.sleep(100)
  // when
  await admin`select pg_terminate_backend(pid) from pg_stat_activity where query like 'select pg_sleep(30), %'`
  // then
  expect(await Promise.all(waiting)).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED', 'CONNECTION_CLOSED'])
  reserved.release()
  expect(await settles(sql`select 1`, 5000)).toBe('resolved')
  await sql.end({ timeout: 1 })
})
