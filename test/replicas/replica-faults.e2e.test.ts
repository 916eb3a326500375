import { afterAll, beforeAll, expect, test } from 'bun:test'
import { tokenHeader } from '../support/plant-client.ts'
import { type PrimaryWithReplica, startPrimaryWithReplica } from '../support/postgres-replica.ts'
import { freePort } from '../support/server-cleanup.ts'
import type { ServerProcess } from '../support/server-process.ts'
import {
  create,
  eventually,
  list,
  metric,
  readsFrom,
  startReplicaServer,
  tokenFor,
} from './replica-client.ts'

// A replica that is down, far behind, or not there never fails a read (docs/operating.md, Scaling out).
let pair: PrimaryWithReplica

beforeAll(async () => {
  pair = await startPrimaryWithReplica()
}, 60_000)
afterAll(() => pair?.stop())

// Creates and reads (with and without the caller's position) until stopped; every status seen.
function runLoad(server: ServerProcess, owner: string) {
  const statuses: number[] = []
  let running = true
  const done = (async () => {
    const token = await tokenFor(owner)
    let position: bigint | undefined
    for (let id = 1; running; id++) {
      const created = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { ...tokenHeader(token), 'content-type': 'application/json' },
        body: JSON.stringify({ id, name: `plant ${id}` }),
      })
      statuses.push(created.status)
      position = BigInt(created.headers.get('plant-store-position') ?? position ?? 0)
      statuses.push((await list(server.url, token)).status)
      statuses.push((await list(server.url, token, position, '?limit=5')).status)
    }
  })()
  return {
    stop: async () => {
      running = false
      await done
      return statuses
    },
  }
}

const replicaServes = async (server: ServerProcess) => {
  const before = await readsFrom(server.url)
  await list(server.url, await tokenFor('probe'))
  const after = await readsFrom(server.url)
  // The load reads meanwhile too: whatever else was read, the primary served none of it.
  return after.all > before.all && after.primary === before.primary
}

test('a stopped replica: reads keep answering 200 from the primary, and the replica serves again once back', async () => {
  // given a server reading from the replica, under a load of creates and reads
  const server = await startReplicaServer({
    DATABASE_URL: pair.primaryUrl,
    DATABASE_READ_URLS: pair.replicaUrl,
  })
  try {
    await eventually('the replica serves reads', () => replicaServes(server))
    const load = runLoad(server, 'stopped')
    // when the replica stops for a while
    await Bun.sleep(300)
    await pair.stopReplica()
    await Bun.sleep(1500)
    const primaryReadsWhileDown = (await readsFrom(server.url)).primary
    expect(await metric(server.url, 'plant_store_read_replica_up')).toBe(0)
    expect((await fetch(`${server.url}/ready`)).status).toBe(200)
    await pair.startReplica()
    // then it serves reads again, by itself
    await eventually('the replica serves reads again', () => replicaServes(server))
    const statuses = await load.stop()
    // and nothing failed meanwhile: the primary answered what the replica could not
    expect(statuses.length).toBeGreaterThan(30)
    expect(statuses.filter((status) => status !== 200)).toEqual([])
    expect(primaryReadsWhileDown).toBeGreaterThan(0)
    expect(await metric(server.url, 'plant_store_read_replica_up')).toBe(1)
  } finally {
    await server.stop()
  }
}, 60_000)

test('a replica far behind serves no read until it catches up', async () => {
  // given a server that allows a replica to be at most 300 ms behind
  const server = await startReplicaServer({
    DATABASE_URL: pair.primaryUrl,
    DATABASE_READ_URLS: pair.replicaUrl,
    READ_MAX_LAG_MS: '300',
  })
  try {
    await eventually('the replica serves reads', () => replicaServes(server))
    const token = await tokenFor('far-behind')
    const load = runLoad(server, 'far-behind-load')
    // when replay stops while writes go on
    await pair.pauseReplay()
    let latest = ''
    try {
      // then soon even a read without a position shows the newest plant: the primary serves it
      await eventually('reads without a position go to the primary', async () => {
        latest = `plant at ${Date.now()}`
        await create(server.url, token, Date.now(), latest)
        return (await list(server.url, token)).names.includes(latest)
      })
      expect(await metric(server.url, 'plant_store_read_replica_lag_seconds')).toBeGreaterThan(0.3)
      expect(await replicaServes(server)).toBe(false)
    } finally {
      await pair.resumeReplay()
    }
    // and once replay resumes the replica serves reads again
    await eventually('the replica serves reads again', () => replicaServes(server))
    expect(await metric(server.url, 'plant_store_read_replica_lag_seconds')).toBeLessThan(0.3)
    const statuses = await load.stop()
    expect(statuses.filter((status) => status !== 200)).toEqual([])
  } finally {
    await server.stop()
  }
}, 60_000)

test('replica URLs that point at nothing: reads answer 200 from the primary, /ready is 200', async () => {
  // given replicas that do not exist, beside the real one
  const nowhere = [freePort(), freePort()].map((port) => `postgres://postgres@127.0.0.1:${port}/postgres`)
  const server = await startReplicaServer({
    DATABASE_URL: pair.primaryUrl,
    DATABASE_READ_URLS: nowhere.join(','),
  })
  try {
    // when a client creates and lists, with and without its position
    const load = runLoad(server, 'nowhere')
    await Bun.sleep(1500)
    const statuses = await load.stop()
    // then every answer is 200, all reads from the primary
    expect(statuses.length).toBeGreaterThan(30)
    expect(statuses.filter((status) => status !== 200)).toEqual([])
    const reads = await readsFrom(server.url)
    expect(reads.primary).toBe(reads.all)
    expect(await metric(server.url, 'plant_store_read_replica_up')).toBe(0)
    expect((await fetch(`${server.url}/ready`)).status).toBe(200)
  } finally {
    await server.stop()
  }
  // and with the real replica among them, it serves the reads
  const mixed = await startReplicaServer({
    DATABASE_URL: pair.primaryUrl,
    DATABASE_READ_URLS: [...nowhere, pair.replicaUrl].join(','),
  })
  try {
    await eventually('the real replica serves reads', () => replicaServes(mixed))
  } finally {
    await mixed.stop()
  }
}, 60_000)
