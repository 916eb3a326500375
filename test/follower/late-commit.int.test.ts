import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { seal, streamIdOf } from '../../src/crypto/sealing.ts'
import type { LoggedEvent } from '../../src/event-log/reading.ts'
import { type LogFollower, runLogFollower } from '../../src/follower/follower.ts'
import { silentLogger } from '../../src/shared/logger.ts'
import { eventually } from '../replicas/replica-client.ts'
import { create, openTestStorage, type TestStorage } from '../support/storage.ts'

// Two writers on their own connections, so their transactions interleave as chosen here, and the
// process's reader of the log (the follower the feed and the change streams take from).
let storage: TestStorage
let first: postgres.ReservedSql
let second: postgres.ReservedSql
let client: postgres.Sql
let follower: LogFollower
const seen: string[] = []
beforeAll(async () => {
  storage = await openTestStorage('postgres')
  client = postgres(storage.url ?? '', { max: 2, onnotice: () => {} })
  first = await client.reserve()
  second = await client.reserve()
  // The owner's key exists, so that the writers below append as the live path does.
  await create(storage, 'o', { id: 0n, name: 'first' })
  follower = runLogFollower({
    db: storage.db,
    keyring: storage.keyring,
    logger: silentLogger(),
    pollMs: 20,
  })
  follower.subscribe((events: LoggedEvent[]) => {
    for (const event of events) seen.push((event.data as { name: string }).name)
  })
  await follower.ready()
})
afterAll(async () => {
  await follower.stop()
  first.release()
  second.release()
  await client.end()
  await storage.close()
})

// Each event is named by its plant's name, which a reader of the log gets back; sealed under the
// owner's key as every event is.
let nextId = 1
const append = async (connection: postgres.ReservedSql, name: string) => {
  const id = String(nextId++)
  const data = JSON.stringify({ id, name, tag: null })
  const [stored] = await connection<{ pseudonym: string; key: Uint8Array }[]>`
    select pseudonym, key from owner_keys where owner = 'o' and not erasing`
  if (!stored) throw new Error('o has no key')
  const raw = storage.keyring.open({ pseudonym: stored.pseudonym, wrapped: stored.key })
  return connection`
    insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    values (${streamIdOf(id, raw)}, 1, 'PlantCreated', 1, ${JSON.stringify(seal(data, raw, 'data', { streamId: streamIdOf(id, raw), streamVersion: 1 }))}::text::jsonb,
            ${JSON.stringify({ pseudonym: stored.pseudonym })}::text::jsonb, now())
    returning position`
}

const settle = () => Bun.sleep(300)

test('an event that commits after a later position was read is handed out first, once, in position order', async () => {
  // given: the first writer takes its transaction id, the second takes the lower position
  seen.length = 0
  await first`begin`
  await first`select pg_current_xact_id()`
  await second`begin`
  await second`select pg_current_xact_id()`
  const [lower] = await append(second, 'late')
  const [higher] = await append(first, 'early')
  expect(BigInt(lower?.position)).toBeLessThan(BigInt(higher?.position))
  // when: the higher position commits first
  await first`commit`
  follower.wake()
  await settle()
  // then nothing is handed out while a lower position may still commit
  expect(seen).toEqual([])
  // when the lower commits
  await second`commit`
  follower.wake()
  // then both come, in position order, once
  await eventually('both events are read', async () => seen.length >= 2, 5000)
  await settle()
  expect(seen).toEqual(['late', 'early'])
})

test('a reader stops before a transaction still running, even if later ones have committed', async () => {
  // given
  seen.length = 0
  await first`begin`
  await append(first, 'slow')
  await append(second, 'fast')
  // when
  follower.wake()
  await settle()
  const whileRunning = [...seen]
  await first`commit`
  follower.wake()
  await eventually('both events are read', async () => seen.length >= 2, 5000)
  // then
  expect(whileRunning).toEqual([])
  expect(seen).toEqual(['slow', 'fast'])
})
