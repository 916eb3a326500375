import { expect, test } from 'bun:test'
import postgres from 'postgres'
import { databaseForFile } from '../support/postgres.ts'
import { settles } from '../support/watched-socket.ts'

// postgres.js 3.4.9 kept a transaction's statements waiting in a queue of its own while its
// connection was busy; when that connection closed, they never settled (porsager/postgres#1186),
// and the rollback the transaction then sent put the closed connection among the busy ones, where
// the pool waited for it forever. Drizzle's transactions are postgres.js's `begin`
// (patches/postgres@3.4.9.patch; fails without it).
const database = databaseForFile('transaction_closed')

test('given statements waiting in a transaction, when its backend is ended, then each fails and the pool goes on', async () => {
  // given
  const sql = postgres(database.url(), { max: 1, onnotice: () => {} })
  let statements: Promise<string>[] = []
  const transaction = settles(
    sql.begin(async (tx) => {
      const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`
      // described first, it fills the connection: the next statement waits in the transaction's queue
      statements = [settles(tx`select pg_sleep(30), ${'a'}::text as note`, 5000), settles(tx`select 2`, 5000)]
      // when
      await database.admin()`select pg_terminate_backend(${row?.pid ?? 0})`
      await Promise.all(statements)
    }),
    5000,
  )
  // then
  expect(await transaction).toBe('CONNECTION_CLOSED')
  expect(await Promise.all(statements)).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED'])
  expect(await settles(sql`select 1`, 5000)).toBe('resolved')
  await sql.end({ timeout: 1 })
})
