import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import type { Subprocess } from 'bun'
import { freePort, shellQuote, stopOnExit } from './server-cleanup.ts'

// A NATS JetStream cluster on loopback: `nats-server --cluster … --routes …` per node, each with a
// store folder of its own in a temporary folder.
export type NatsNode = {
  name: string
  url: string
  kill: (signal?: NodeJS.Signals) => Promise<void>
  restart: () => Promise<void>
}

export type NatsCluster = {
  nodes: NatsNode[]
  // Every node's client URL, comma-separated (EVENTS_NATS_URL).
  urls: string
  // The folder that holds each node's store folder (named after the node).
  storeDir: string
  // The node that leads a stream now.
  leaderOf: (stream: string) => Promise<NatsNode>
  stop: () => void
}

const NATS_SERVER =
  process.env.TEST_NATS_SERVER ??
  Bun.which('nats-server') ??
  Bun.which('nats-server', { PATH: '/usr/sbin' }) ??
  'nats-server'

export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-nats-'))
  const specs = Array.from({ length: size }, (_, index) => ({
    name: `n${index + 1}`,
    port: freePort(),
    clusterPort: freePort(),
  }))
  const processes = new Map<string, Subprocess>()
  const launch = (spec: (typeof specs)[number]) => {
    const routes = specs
      .filter((other) => other !== spec)
      .map((other) => `nats://127.0.0.1:${other.clusterPort}`)
      .join(',')
    const child = Bun.spawn(
      [
        NATS_SERVER,
        '-js',
        '-a',
        '127.0.0.1',
        '-p',
        String(spec.port),
        '--server_name',
        spec.name,
        '--cluster_name',
        'plant-store-test',
        '--cluster',
        `nats://127.0.0.1:${spec.clusterPort}`,
        '--routes',
        routes,
        '-sd',
        join(dir, spec.name),
      ],
      { stdout: 'ignore', stderr: 'ignore' },
    )
    processes.set(spec.name, child)
    // The fallback stop reads the nodes' process ids from here: a restarted node has a new one.
    writeFileSync(pidsFile, [...processes.values()].map((node) => node.pid).join(' '))
  }
  const pidsFile = join(dir, 'pids')
  const stop = stopOnExit(
    () => {
      for (const child of processes.values()) child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    },
    `kill -9 $(cat ${shellQuote(pidsFile)}) 2>/dev/null; rm -rf ${shellQuote(dir)}`,
  )
  const urls = specs.map((spec) => `nats://127.0.0.1:${spec.port}`).join(',')
  try {
    for (const spec of specs) launch(spec)
    await clusterReady(urls)
  } catch (error) {
    stop()
    throw new Error(`could not start a ${size}-node NATS cluster with ${NATS_SERVER}: ${String(error)}`)
  }
  const nodes = specs.map((spec) => ({
    name: spec.name,
    url: `nats://127.0.0.1:${spec.port}`,
    kill: async (signal: NodeJS.Signals = 'SIGKILL') => {
      const child = processes.get(spec.name)
      child?.kill(signal)
      await child?.exited
    },
    restart: async () => {
      launch(spec)
      await clusterReady(`nats://127.0.0.1:${spec.port}`)
    },
  }))
  return {
    nodes,
    urls,
    storeDir: dir,
    leaderOf: (stream) =>
      untilAnswered(urls, 2000, `the stream ${stream} has no leader`, async (jsm) => {
        const info = await jsm.streams.info(stream)
        const node = nodes.find((candidate) => candidate.name === info.cluster?.leader)
        if (!node) throw new Error(JSON.stringify(info.cluster))
        return node
      }),
    stop,
  }
}

export type NatsServer = { url: string; storeDir: string; stop: () => void }

// One nats-server with JetStream, not clustered, storing in a temporary folder of its own.
export async function startNatsServer(): Promise<NatsServer> {
  const storeDir = mkdtempSync(join(tmpdir(), 'plant-store-nats-'))
  const port = freePort()
  const child = Bun.spawn([NATS_SERVER, '-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], {
    stdout: 'ignore',
    stderr: 'ignore',
  })
  const stop = stopOnExit(
    () => {
      child.kill('SIGKILL')
      rmSync(storeDir, { recursive: true, force: true })
    },
    `kill -9 ${child.pid} 2>/dev/null; rm -rf ${shellQuote(storeDir)}`,
  )
  const url = `nats://127.0.0.1:${port}`
  try {
    await clusterReady(url)
  } catch (error) {
    stop()
    throw new Error(`could not start ${NATS_SERVER}: ${String(error)}`)
  }
  return { url, storeDir, stop }
}

// JetStream answers on the cluster once its nodes have elected a meta leader.
async function clusterReady(urls: string): Promise<void> {
  await untilAnswered(urls, 1000, 'JetStream did not answer within 30 s', (jsm) => jsm.getAccountInfo())
}

// `ask`'s answer on a fresh connection to the cluster, asked again until it gives one (30 s at the
// most; else `failure`, with the last error).
async function untilAnswered<T>(
  urls: string,
  timeout: number,
  failure: string,
  ask: (jsm: JetStreamManager) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + 30_000
  let last: unknown
  while (Date.now() < deadline) {
    try {
      const nc = await connect({ servers: urls.split(','), timeout, reconnect: false })
      try {
        return await ask(await jetstreamManager(nc, { timeout }))
      } finally {
        await nc.close()
      }
    } catch (error) {
      last = error
    }
    await Bun.sleep(100)
  }
  throw new Error(`${failure}: ${String(last)}`)
}
