import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPostgres } from '../../src/database/database.ts'
import { create, list, readsFrom, SECRET, tokenFor } from '../replicas/replica-client.ts'
import type { PrimaryWithReplica } from '../support/postgres-replica.ts'
import { runCli, type ServerProcess } from '../support/server-process.ts'
import { type ReplicatedService, startService } from '../support/service.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { findTraces } from './traces.ts'

// An erasure reaches every instance and every read replica once it has replayed (docs/erasure.md):
// two instances, one reading from a streaming replica, the command run beside them.
let service: ReplicatedService
let pair: PrimaryWithReplica
let readingReplica: ServerProcess
let onPrimary: ServerProcess

beforeAll(async () => {
  service = await startService({
    label: 'erasure_replica',
    replicas: true,
    secret: SECRET,
    env: { DATABASE_POOL_SIZE: '4', READ_WAIT_MS: '1000' },
  })
  ;({ pair, server: readingReplica } = service)
  onPrimary = await service.startAnother({ DATABASE_READ_URLS: '' })
}, 60_000)
afterAll(async () => {
  await service?.stop()
}, 30_000)

test('after owners erase, every instance and the replica answer [] for the owner, the others unchanged, and the replica holds nothing readable of them', async () => {
  // given
  const gone = await tokenFor('gone-ray-qwv')
  const kept = await tokenFor('kept-kim')
  await create(onPrimary.url, gone, 4815162342, 'Qwvfern gone')
  await create(readingReplica.url, gone, 2, 'Qwvpalm gone')
  const keptPosition = await create(onPrimary.url, kept, 1, 'Kept fern')
  await pair.caughtUp()
  expect((await list(readingReplica.url, gone)).names).toEqual(['Qwvfern gone', 'Qwvpalm gone'])
  // when
  const erased = await runCli(['owners', 'erase', 'gone-ray-qwv'], {
    DATABASE_URL: pair.primaryUrl,
    AUTH_JWT_SECRET: SECRET,
  })
  // then
  expect(erased).toMatchObject({ exitCode: 0, stdout: '2\n' })
  await pair.caughtUp()
  const before = await readsFrom(readingReplica.url)
  expect((await list(readingReplica.url, gone)).body).toEqual([])
  expect((await list(readingReplica.url, kept)).names).toEqual(['Kept fern'])
  expect((await readsFrom(readingReplica.url)).primary).toBe(before.primary)
  expect((await list(onPrimary.url, gone)).body).toEqual([])
  expect((await list(readingReplica.url, kept, keptPosition)).names).toEqual(['Kept fern'])
  // and no live row or statistic of the replica reveals the owner
  const replica = openPostgres({
    keys: TEST_KEYS,
    url: pair.replicaUrl,
    poolSize: 1,
    statementTimeoutMs: 10_000,
  })
  try {
    expect(await findTraces(replica.db, ['gone-ray-qwv', 'Qwvfern', 'Qwvpalm', '4815162342'])).toEqual([])
  } finally {
    await replica.close()
  }
  // and the same subject starts anew, on either instance
  await create(readingReplica.url, gone, 4815162342, 'A new start')
  expect((await list(onPrimary.url, gone)).names).toEqual(['A new start'])
}, 60_000)
