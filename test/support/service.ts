import { rm } from 'node:fs/promises'
import { issueToken } from '../../src/auth/issue-token.ts'
import { readLocalSecret } from '../../src/auth/local-secret.ts'
import { makeDataDir } from './data-dir.ts'
import { createTestFeed, type TestFeed } from './nats.ts'
import { createTestDatabase, type TestDatabase } from './postgres.ts'
import { type PrimaryWithReplica, type ReplicaOptions, startPrimaryWithReplica } from './postgres-replica.ts'
import { stopOnExit } from './server-cleanup.ts'
import { type Env, runCli, type ServerProcess, startServer } from './server-process.ts'

export type ServiceOptions = {
  // 'postgres' (default): a fresh database on the test PostgreSQL; 'embedded': a fresh DATA_DIR.
  storage?: 'postgres' | 'embedded'
  // A primary and a streaming replica of their own (initdb, pg_basebackup), the server reading
  // from the replica; `true` for the defaults. PostgreSQL only.
  replicas?: boolean | ReplicaOptions
  // Publish the log to a NATS stream of the test's own.
  feed?: boolean
  // Names the database, stream and data folder, for whoever reads what a failed test left.
  label?: string
  // null: no AUTH_JWT_SECRET, so an embedded server makes its own in DATA_DIR as the default does
  // (tokenFor reads it there once a server has started). Embedded only.
  secret?: string | null
  // More of the server's environment; it wins over what the fixture sets.
  env?: Env
  command?: string[]
  // The DATABASE_URL the servers and the CLI get, made from the fresh database's own URL (one through
  // a proxy, a multi-host one); `databaseUrl` in the result stays the database's own. PostgreSQL only.
  databaseUrl?: (url: string) => string
  // How many server processes to start at once (default 1), for tests of servers starting together;
  // 0 for the storage (and feed) alone, the test starting its servers with startAnother.
  instances?: number
}

export type Service = {
  url: string
  server: ServerProcess
  // Every server started at the start (`instances` of them), `server` first.
  servers: ServerProcess[]
  // The server's environment, for the CLI or another instance beside it.
  env: Env
  // Undefined with `secret: null`.
  secret?: string
  databaseUrl?: string
  database?: TestDatabase
  pair?: PrimaryWithReplica
  feed?: TestFeed
  dataDir?: string
  tokenFor: (subject: string, ttlSeconds?: number) => Promise<string>
  // Another server process on the same storage and feed (stopped by stop() too).
  startAnother: (env?: Env, command?: string[]) => Promise<ServerProcess>
  cli: (args: string[], stdin?: string) => ReturnType<typeof runCli>
  // Stops every server it started and removes the database, replicas, stream and data folder.
  stop: () => Promise<void>
}

export const SERVICE_SECRET = 'service-fixture-secret-of-at-least-32-bytes'

export type ReplicatedService = Service & { pair: PrimaryWithReplica }

// What `instances: 0` gives: everything but a running server.
export type ServiceStorage = Omit<Service, 'url' | 'server'>

// One running service over real parts, as a test needs it: storage, replicas and feed are options.
export async function startService(
  options: ServiceOptions & { replicas: true | ReplicaOptions },
): Promise<ReplicatedService>
export async function startService(options: ServiceOptions & { instances: 0 }): Promise<ServiceStorage>
export async function startService(options?: ServiceOptions): Promise<Service>
export async function startService(options: ServiceOptions = {}): Promise<Service | ServiceStorage> {
  const { storage = 'postgres', label = 'service', secret = SERVICE_SECRET } = options
  if (storage === 'embedded' && options.replicas) throw new Error('replicas need storage: postgres')
  if (storage === 'embedded' && options.databaseUrl) throw new Error('databaseUrl needs storage: postgres')
  if (storage !== 'embedded' && secret === null) throw new Error('secret: null needs storage: embedded')
  const cleanups: (() => Promise<void>)[] = []
  const servers: ServerProcess[] = []
  const stop = async () => {
    for (const server of servers.splice(0)) {
      server.process.kill('SIGKILL')
      await server.process.exited
    }
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  }
  try {
    const env: Env = secret === null ? {} : { AUTH_JWT_SECRET: secret }
    let database: TestDatabase | undefined
    let pair: PrimaryWithReplica | undefined
    let dataDir: string | undefined
    if (options.replicas) {
      const started = await startPrimaryWithReplica(options.replicas === true ? {} : options.replicas)
      pair = started
      cleanups.push(async () => started.stop())
      Object.assign(env, { DATABASE_URL: started.primaryUrl, DATABASE_READ_URLS: started.replicaUrl })
    } else if (storage === 'postgres') {
      const created = await createTestDatabase(label)
      database = created
      cleanups.push(created.drop)
      env.DATABASE_URL = created.url
    } else {
      const made = await makeDataDir(`plant-store-${label}-`)
      dataDir = made
      cleanups.push(() => rm(made, { recursive: true, force: true }))
      env.DATA_DIR = made
    }
    if (options.databaseUrl && env.DATABASE_URL) env.DATABASE_URL = options.databaseUrl(env.DATABASE_URL)
    let feed: TestFeed | undefined
    if (options.feed) {
      const created = await createTestFeed(label)
      feed = created
      cleanups.push(created.drop)
      Object.assign(env, created.env)
    }
    Object.assign(env, options.env)
    const startAnother = async (more: Env = {}, command = options.command) => {
      const server = await startServer({ ...env, ...more }, command)
      // Its warnings are not read here; drained, they never fill the pipe and stall it.
      void server.process.stderr.pipeTo(new WritableStream()).catch(() => {})
      // Killed with the test process even if afterAll never runs.
      const forget = stopOnExit(() => server.process.kill('SIGKILL'), `kill -9 ${server.process.pid}`)
      void server.process.exited.then(forget)
      servers.push(server)
      return server
    }
    const started = await Promise.all(Array.from({ length: options.instances ?? 1 }, () => startAnother()))
    const server = started[0]
    const key = async () => {
      if (secret !== null) return new TextEncoder().encode(secret)
      const local = await readLocalSecret(dataDir ?? '')
      if (!local) throw new Error('no server has made its local secret yet')
      return local
    }
    return {
      ...(server && { url: server.url, server }),
      servers: started,
      env,
      secret: secret ?? undefined,
      databaseUrl: pair?.primaryUrl ?? database?.url,
      database,
      pair,
      feed,
      dataDir,
      tokenFor: async (subject, ttlSeconds = 3600) =>
        issueToken(await key(), { subject, ttlSeconds, now: new Date() }),
      startAnother,
      cli: (args, stdin) => runCli(args, env, stdin),
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}
