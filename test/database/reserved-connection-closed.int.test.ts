import { expect, test } from 'bun:test'
import net from 'node:net'
import postgres from 'postgres'
import { databaseForFile } from '../support/postgres.ts'
import { settles } from '../support/watched-socket.ts'

// postgres.js 3.4.9's reserved connections (patches/postgres@3.4.9.patch; each test fails without
// it). The advisory locks (locks/advisory-lock.ts) hold one each, so a DBA ending its backend must
// fail the lock's statements, not hang them or end the process.
const database = databaseForFile('reserved_closed')

// porsager/postgres#1199 (and porsager/postgres#1208: the statement's write on the closed socket
// threw from a timer, which ends the process).
test('given a reserved connection whose backend was ended, when it is used and released, then its statements fail and the pool goes on', async () => {
  // given
  const sql = postgres(database.url(), { max: 1, onnotice: () => {} })
  const reserved = await sql.reserve()
  const inFlight = settles(reserved`select pg_sleep(30)`, 5000)
  await Bun.sleep(100)
  // when
  await database.admin()`select pg_terminate_backend(pid) from pg_stat_activity where query = 'select pg_sleep(30)'`
  // then
  expect(await inFlight).toBe('CONNECTION_CLOSED')
  expect(await settles(reserved`select 1`, 5000)).toBe('CONNECTION_CLOSED')
  reserved.release()
  expect(await settles(sql`select 1`, 5000)).toBe('resolved')
  await sql.end({ timeout: 1 })
})

test('given statements waiting on a reserved connection, when its backend is ended, then each of them fails', async () => {
  // given: a statement described first fills the connection, so the next ones wait in its queue
  const sql = postgres(database.url(), { max: 1, onnotice: () => {} })
  const reserved = await sql.reserve()
  const waiting = [
    settles(reserved`select pg_sleep(30), ${'described first'}::text as note`, 5000),
    settles(reserved`select 2`, 5000),
    settles(reserved`select 3`, 5000),
  ]
  await Bun.sleep(100)
  // when
  await database.admin()`select pg_terminate_backend(pid) from pg_stat_activity where query like 'select pg_sleep(30), %'`
  // then
  expect(await Promise.all(waiting)).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED', 'CONNECTION_CLOSED'])
  reserved.release()
  expect(await settles(sql`select 1`, 5000)).toBe('resolved')
  await sql.end({ timeout: 1 })
})

test('given a reserve whose connection failed, when a busy connection comes free, then a later reserve gets it', async () => {
  // given: a pool of two, one connection busy; the reserve opens the other, which fails while it
  // starts (its error reported before its close, as Bun reports a reset)
  const { hostname, port } = new URL(database.url())
  const silent = net.createServer(() => {})
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  let attempts = 0
  let failing: net.Socket | undefined
  const open = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const second = ++attempts === 2
      const socket = net.connect(
        second ? (silent.address() as net.AddressInfo).port : Number(port || 5432),
        hostname,
      )
      if (second) failing = socket
      socket.once('connect', () => resolve(socket))
      socket.once('error', reject)
    })
  // postgres.js documents `socket` but its 3.4 types omit it (test/support/watched-socket.ts)
  const sql = postgres(database.url(), { max: 2, onnotice: () => {}, ...{ socket: open } })
  await sql`select 1`
  const busy = sql`select pg_sleep(0.3)`.then((rows) => rows)
  await Bun.sleep(50)
  const failed = settles(sql.reserve(), 5000)
  await Bun.sleep(50)
  failing?.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }))
  expect(await failed).toBe('ECONNRESET')
  // when: the busy connection comes free before the failed one's close
  await busy
  await Bun.sleep(50)
  failing?.destroy()
  failing?.emit('close', true)
  const holder = await sql.reserve()
  // then: the failed reserve did not take the freed connection for no one
  expect(
    await settles(
      sql.reserve().then((reserved) => reserved.release()),
      5000,
    ),
  ).toBe('resolved')
  holder.release()
  await sql.end({ timeout: 1 })
  silent.close()
})
