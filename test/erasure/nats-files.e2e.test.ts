import { afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import postgres from 'postgres'
import { plantSubject } from '../../src/feed/cloud-event.ts'
import { findInFiles } from '../support/file-traces.ts'
import { startNatsCluster, startNatsServer } from '../support/nats-cluster.ts'
import { postPlant, tokensFor } from '../support/plant-client.ts'
import { runCli, type ServerProcess } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'

const SECRET = 'nats-files-e2e-secret-of-32-bytes!!'
const PLANTS = 300
// What only Ann's plants hold: names, a tag and ids (decimal in the messages' JSON). The `sub`
// itself stays in the OwnerErased notice, by design.
const ANN_NEEDLES = ['AnnSecretName', 'AnnSecretTag', '"98765']
const annPlant = (index: number) => ({
  id: 9_876_500_000 + index,
  name: `AnnSecretName${index}`,
  tag: 'AnnSecretTag',
})
const bobPlant = (index: number) => ({ id: 1_000 + index, name: `Bob plant ${index}` })

// Erasure (docs/erasure.md) down to NATS's own files, on a nats-server the test starts itself (as Debian ships
// it: /usr/sbin/nats-server 2.9), so that its store folder can be searched byte by byte.
describe("NATS's files after an erasure", () => {
  let storage: ServiceStorage
  let sql: postgres.Sql
  let tokens: Record<'ann' | 'bob', string>
  const stops: (() => unknown)[] = []
  const feedEnv = (url: string) => ({
    EVENTS_NATS_URL: url,
    EVENTS_NATS_STREAM: 'PLANTS_FILES',
    EVENTS_NATS_SUBJECT_PREFIX: 'files',
  })
  const serve = async (env: Record<string, string>): Promise<ServerProcess> => {
    const server = await storage.startAnother(env)
    stops.push(async () => {
      server.process.kill('SIGKILL')
      await server.process.exited
    })
    return server
  }
  const natsClient = async (urls: string): Promise<NatsConnection> => {
    const nc = await connect({ servers: urls.split(','), timeout: 5000 })
    stops.push(() => nc.close())
    return nc
  }
  // A service publishing to a NATS server of the test's own, and both owners' plants in its stream.
  const bothPublished = async () => {
    const nats = await startNatsServer()
    stops.push(nats.stop)
    const nc = await natsClient(nats.url)
    const server = await serve(feedEnv(nats.url))
    await createBoth(server, nc)
    return { nats, nc, server }
  }
  // Both owners' plants, by turns, until the stream holds them all.
  const createBoth = async (server: ServerProcess, nc: NatsConnection) => {
    for (let index = 0; index < PLANTS; index++) {
      expect((await postPlant(server.url, tokens.ann, annPlant(index))).status).toBe(200)
      expect((await postPlant(server.url, tokens.bob, bobPlant(index))).status).toBe(200)
    }
    const jsm = await jetstreamManager(nc)
    const deadline = Date.now() + 30_000
    while ((await jsm.streams.info('PLANTS_FILES').catch(() => undefined))?.state.messages !== 2 * PLANTS) {
      if (Date.now() > deadline) throw new Error('the stream did not get every plant')
      await Bun.sleep(100)
    }
  }
  const erase = (env: Record<string, string>) =>
    runCli(['owners', 'erase', 'ann'], { ...storage.env, ...env })

  beforeAll(async () => {
    tokens = await tokensFor(SECRET, ['ann', 'bob'])
  })
  beforeEach(async () => {
    storage = await startService({ label: 'nats_files', secret: SECRET, instances: 0 })
    sql = postgres(String(storage.databaseUrl), { max: 2, onnotice: () => {} })
  })
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop()
    await sql.end()
    await storage.stop()
  })

  test("the owner's names, tags and ids are gone from the stream's files when the command exits", async () => {
    // given: a service publishing both owners' plants to a server of the test's own
    const { nats } = await bothPublished()
    expect(findInFiles(nats.storeDir, ANN_NEEDLES)).not.toEqual([])
    // when
    const erased = await erase(feedEnv(nats.url))
    // then
    expect(erased).toMatchObject({ exitCode: 0, stdout: `${PLANTS}\n` })
    expect(findInFiles(nats.storeDir, ANN_NEEDLES)).toEqual([])
    expect(findInFiles(nats.storeDir, ['Bob plant 299'])).not.toEqual([])
  }, 120_000)

  test('a purge leaves the bytes in the block files; deleting the stream, which the service makes again from the log, removes them', async () => {
    // given: Ann's messages purged by subject, as an earlier version erased (no erasure of the
    // bytes), and her key gone
    const { nats, nc, server } = await bothPublished()
    const [{ pseudonym }] = (await sql`select pseudonym from owner_keys where owner = 'ann'`) as unknown as [
      { pseudonym: string },
    ]
    const jsm = await jetstreamManager(nc)
    await jsm.streams.purge('PLANTS_FILES', { filter: plantSubject('files', pseudonym) })
    expect(await erase(feedEnv(nats.url))).toMatchObject({ exitCode: 0, stdout: `${PLANTS}\n` })
    expect((await jsm.streams.info('PLANTS_FILES')).state.messages).toBe(PLANTS + 1)
    expect(findInFiles(nats.storeDir, ANN_NEEDLES).length).toBeGreaterThan(0)
    // when: the stream is deleted (`nats stream rm PLANTS_FILES` sends this request) and the next
    // create makes the service publish the log again
    await jsm.streams.delete('PLANTS_FILES')
    expect((await postPlant(server.url, tokens.bob, bobPlant(PLANTS))).status).toBe(200)
    const deadline = Date.now() + 30_000
    while ((await jsm.streams.info('PLANTS_FILES').catch(() => undefined))?.state.messages !== PLANTS + 1) {
      if (Date.now() > deadline) throw new Error('the service did not publish the log again')
      await Bun.sleep(100)
    }
    // then
    expect(findInFiles(nats.storeDir, ANN_NEEDLES)).toEqual([])
  }, 120_000)

  test("on a three-node cluster: every node's stream files within moments, their Raft logs at a graceful restart", async () => {
    // given: a stream of three replicas
    const cluster = await startNatsCluster(3)
    stops.push(cluster.stop)
    const nc = await natsClient(cluster.urls)
    const env = { ...feedEnv(cluster.urls), EVENTS_NATS_REPLICAS: '3' }
    const server = await serve(env)
    await createBoth(server, nc)
    const inStreams = () =>
      findInFiles(cluster.storeDir, ANN_NEEDLES).filter((line) => !line.includes('/_js_/'))
    // when
    const erased = await erase(env)
    // then: the followers erase as they apply the leader's deletes
    expect(erased).toMatchObject({ exitCode: 0, stdout: `${PLANTS}\n` })
    const deadline = Date.now() + 10_000
    while (inStreams().length > 0 && Date.now() < deadline) await Bun.sleep(200)
    expect(inStreams()).toEqual([])
    // and each node's Raft log of the stream keeps them until it is compacted, which a graceful
    // stop does (`systemctl restart nats-server` sends SIGINT), one node at a time
    expect(findInFiles(cluster.storeDir, ANN_NEEDLES).some((line) => line.includes('/_js_/'))).toBe(true)
    for (const node of cluster.nodes) {
      await node.kill('SIGINT')
      await node.restart()
    }
    expect(findInFiles(cluster.storeDir, ANN_NEEDLES)).toEqual([])
  }, 120_000)
})
