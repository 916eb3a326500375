import { type Env, SERVER_COMMAND, type ServerProcess, startServer } from '../support/server-process.ts'

// The processes under test, started the way an operator would start them.
export type Bench = {
  secret: string
  poolSize: number
  logLevel: string
  // The checkout whose service is measured: this one unless another is named (`--service-root`),
  // so that an earlier version can be measured by the same harness, before and after a change.
  serviceRoot?: string
}

// The service on PostgreSQL.
// `runtimeFlags` go to Bun before the entry (a CPU profile, say).
export async function startService(
  bench: Bench,
  databaseUrl: string,
  extra: Env = {},
  runtimeFlags: string[] = [],
): Promise<ServerProcess> {
  return startServiceWith(
    bench,
    { DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: String(bench.poolSize), ...extra },
    runtimeFlags,
  )
}

// The service on the embedded default, in `dataDir`.
export async function startEmbeddedService(bench: Bench, dataDir: string): Promise<ServerProcess> {
  return startServiceWith(bench, { DATA_DIR: dataDir })
}

async function startServiceWith(bench: Bench, env: Env, runtimeFlags: string[] = []): Promise<ServerProcess> {
  const [runtime = 'bun', ...rest] = SERVER_COMMAND
  const command = [runtime, ...runtimeFlags, ...rest]
  return drained(
    await startServer({ AUTH_JWT_SECRET: bench.secret, LOG_LEVEL: bench.logLevel, ...env }, command, {
      cwd: bench.serviceRoot,
    }),
  )
}

export async function startHttpCeiling(bench: Bench): Promise<ServerProcess> {
  return drained(await startServer({ AUTH_JWT_SECRET: bench.secret }, ['bun', 'test/bench/http-ceiling.ts']))
}

// Nobody reads a bench server's stderr: drain it, so a full pipe never stalls the server.
function drained(server: ServerProcess): ServerProcess {
  void server.process.stderr.pipeTo(new WritableStream()).catch(() => {})
  return server
}

// The CRUD peer (crud-peer.ts) on the same database, with the service's pool size.
export async function startCrudPeer(bench: Bench, databaseUrl: string): Promise<ServerProcess> {
  return drained(
    await startServer(
      {
        AUTH_JWT_SECRET: bench.secret,
        DATABASE_URL: databaseUrl,
        DATABASE_POOL_SIZE: String(bench.poolSize),
      },
      ['bun', 'test/bench/crud-peer.ts'],
    ),
  )
}
