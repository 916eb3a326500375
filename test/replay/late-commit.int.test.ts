import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { LOG_START, type LogCursor, readLog } from '../../src/store/event-log.ts'
import { openTestStorage, type TestStorage } from './storage.ts'

// Two writers on their own connections, so their transactions interleave as chosen here.
let storage: TestStorage
let first: postgres.ReservedSql
let second: postgres.ReservedSql
let client: postgres.Sql
beforeAll(async () => {
  storage = await openTestStorage('postgres')
  client = postgres(storage.url ?? '', { max: 2, onnotice: () => {} })
  first = await client.reserve()
  second = await client.reserve()
})
afterAll(async () => {
  first.release()
  second.release()
  await client.end()
  await storage.close()
})

// Each event is named by its plant's name, which a reader of the log gets back.
const append = (connection: postgres.ReservedSql, name: string) =>
  connection`insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
             values (${`plant:1:${name}`}, 1, 'PlantCreated', 1, ${connection.json({ id: '1', name, tag: null })},
                     '{"owner":"o","requestId":"r"}', now()) returning position`

async function readToEnd(from: LogCursor) {
  let cursor = from
  const seen: string[] = []
  for (;;) {
    const batch = await readLog(storage.db, cursor, 1)
    const last = batch.at(-1)
    if (!last) return { cursor, seen }
    seen.push((last.data as { name: string }).name)
    cursor = { transactionId: last.transactionId, position: last.position }
  }
}

test('an event that commits after a later position was read is still read, once', async () => {
  // given: the first writer takes its transaction id, the second takes the lower position
  await first`begin`
  await first`select pg_current_xact_id()`
  await second`begin`
  await second`select pg_current_xact_id()`
  const [lower] = await append(second, 'late')
  const [higher] = await append(first, 'early')
  expect(BigInt(lower?.position)).toBeLessThan(BigInt(higher?.position))
  // when: the higher position commits first and a reader catches up, then the lower commits
  await first`commit`
  const beforeLateCommit = await readToEnd(LOG_START)
  await second`commit`
  const afterLateCommit = await readToEnd(beforeLateCommit.cursor)
  // then
  expect(beforeLateCommit.seen).toEqual(['early'])
  expect(afterLateCommit.seen).toEqual(['late'])
})

test('a reader stops before a transaction still running, even if later ones have committed', async () => {
  // given
  const start = await readToEnd(LOG_START)
  await first`begin`
  await append(first, 'slow')
  await append(second, 'fast')
  // when
  const whileRunning = await readToEnd(start.cursor)
  await first`commit`
  const afterCommit = await readToEnd(whileRunning.cursor)
  // then
  expect(whileRunning.seen).toEqual([])
  expect(afterCommit.seen).toEqual(['slow', 'fast'])
})
