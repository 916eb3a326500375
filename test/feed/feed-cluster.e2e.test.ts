import { afterAll, beforeAll, expect, test } from 'bun:test'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import postgres from 'postgres'
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts'
import { postPlant } from '../support/plant-client.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

// The feed on a three-node NATS JetStream cluster, its stream kept by all three (docs/operating.md, Scaling out):
// the node leading the stream is killed while writers run, and restarted.
const STREAM = `CLUSTER_${crypto.randomUUID().slice(0, 8)}`
const PREFIX = `cluster.${STREAM}`
let cluster: NatsCluster
let service: Service
let server: ServerProcess
let nc: NatsConnection

beforeAll(async () => {
  cluster = await startNatsCluster(3)
  service = await startService({
    label: 'feed_cluster',
    env: {
      EVENTS_NATS_URL: cluster.urls,
      EVENTS_NATS_STREAM: STREAM,
      EVENTS_NATS_SUBJECT_PREFIX: PREFIX,
      EVENTS_NATS_REPLICAS: '3',
    },
  })
  server = service.server
  nc = await connect({ servers: cluster.urls.split(','), timeout: 5000 })
}, 60_000)
afterAll(async () => {
  await nc?.close()
  await server?.stop()
  await service?.stop()
  cluster?.stop()
}, 30_000)

async function streamState() {
  const info = await (await jetstreamManager(nc, { timeout: 5000 })).streams.info(STREAM)
  return { messages: info.state.messages, replicas: info.config.num_replicas }
}

// Every message's Nats-Msg-Id (the event's position), in stream order.
async function streamPositions(count: number): Promise<string[]> {
  const consumer = await jetstream(nc).consumers.get(STREAM)
  const positions: string[] = []
  const messages = await consumer.consume()
  for await (const message of messages) {
    positions.push(message.headers?.get('Nats-Msg-Id') ?? '?')
    if (positions.length >= count) break
  }
  await messages.close()
  return positions
}

function startWriters(writers: number) {
  const statuses: number[] = []
  let running = true
  const done = Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      const token = await service.tokenFor(`writer-${writer}`, 600)
      for (let id = 1; running; id++) {
        statuses.push((await postPlant(server.url, token, { id, name: `plant ${id}` })).status)
        await Bun.sleep(5)
      }
    }),
  )
  return {
    count: () => statuses.length,
    stop: async () => {
      running = false
      await done
      return statuses
    },
  }
}

test('with the stream leader killed and restarted under writes, the stream equals the log, once each, in order', async () => {
  // given a stream the service created with three replicas
  await expectEventually(async () => (await streamState().catch(() => undefined))?.replicas === 3)
  // and writers running
  const writers = startWriters(4)
  await expectEventually(async () => (await streamState()).messages >= 50)
  // when the node leading the stream is killed, and restarted a while later
  const leader = await cluster.leaderOf(STREAM)
  await leader.kill('SIGKILL')
  await Bun.sleep(3000)
  const writtenWhileDown = writers.count()
  await leader.restart()
  await Bun.sleep(2000)
  const statuses = await writers.stop()
  expect(statuses.length).toBeGreaterThan(writtenWhileDown)
  // then every create succeeded (the feed never holds up a create)
  expect(statuses.filter((status) => status !== 200)).toEqual([])
  // and the stream catches up with the log: each event exactly once, in log order
  const sql = postgres(String(service.databaseUrl), { max: 1, onnotice: () => {} })
  const log = (await sql`select position::text as position from events order by events.position`).map((row) =>
    String(row.position),
  )
  await sql.end()
  expect(log.length).toBe(statuses.length)
  await expectEventually(async () => (await streamState()).messages >= log.length, 60_000)
  expect((await streamState()).messages).toBe(log.length)
  expect(await streamPositions(log.length)).toEqual(log)
  // and the restarted node leads or follows again: the stream still has three replicas
  expect((await streamState()).replicas).toBe(3)
}, 120_000)

async function expectEventually(check: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await Bun.sleep(100)
  }
  throw new Error(`the condition did not hold within ${timeoutMs} ms: ${check.toString()}`)
}
